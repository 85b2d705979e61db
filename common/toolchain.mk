# The toolchain: paths, flags and build mode, shared by every Makefile here.
#
#   make [MPI=1] [MPI_HOME=dir] [NCCL_HOME=dir] [CUDA_HOME=dir] [V=1]
#
# NCCL_HOME unset: nccl.h and libnccl come from the compiler's default paths
# (e.g. /usr/include and /usr/lib/x86_64-linux-gnu), else from CUDA_HOME.
# NCCL_HOME set: its include/ and lib/, with an rpath so the program finds it;
# an install tree (lib/libnccl.so) or the pip wheel's layout (only
# lib/libnccl.so.2).

TOOLCHAIN_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?=
MPI ?= 0
MPI_HOME ?=
PREFIX ?= /usr/local
DESTDIR ?=
CFLAGS ?= -O2 -g
LDFLAGS ?=

ifeq ($(wildcard $(CUDA_HOME)/include/cuda_runtime.h),)
  ifneq ($(filter-out help clean,$(or $(MAKECMDGOALS),all)),)
    $(error CUDA_HOME=$(CUDA_HOME) has no include/cuda_runtime.h: set CUDA_HOME to the CUDA toolkit's folder (default /usr/local/cuda))
  endif
endif

ifeq ($(MPI),1)
  MODE := mpi
  MPICC ?= $(if $(MPI_HOME),$(MPI_HOME)/bin/mpicc,mpicc)
  ifeq ($(filter clean help,$(MAKECMDGOALS)),)
    ifeq ($(shell command -v $(MPICC) 2>/dev/null),)
      $(error MPI=1 needs MPI's compiler wrapper, and '$(MPICC)' is not found: install Open MPI (Debian: apt-get install openmpi-bin libopenmpi-dev), or set MPI_HOME or MPICC)
    endif
  endif
  # mpicc by default; with another CC (make CC=clang MPI=1) add the flags
  # mpicc would (Open MPI's --showme; MPICH's mpicc takes -compile-info).
  ifeq ($(origin CC),default)
    CC := $(MPICC)
  else
    MODE_CPPFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null || $(MPICC) -compile-info 2>/dev/null | cut -d' ' -f2-)
    MODE_LIBS := $(shell $(MPICC) --showme:link 2>/dev/null || $(MPICC) -link-info 2>/dev/null | cut -d' ' -f2-)
  endif
  TRANSPORT := mpi
else ifeq ($(MPI),0)
  MODE := pthread
  MODE_CPPFLAGS :=
  TRANSPORT := threads
else
  $(error MPI=$(MPI): use MPI=1 for the MPI build or MPI=0 (default) for threads)
endif

# shell_quote TEXT: TEXT as one word of the shell (a path with a space).
shell_quote = '$(subst ','\'',$(1))'
ifneq ($(NCCL_HOME),)
  # (quoted: NCCL_HOME may have a space, which make's own functions cannot
  # name, so the shell looks at its files)
  NCCL_Q := $(call shell_quote,$(NCCL_HOME))
  NCCL_CPPFLAGS := -I$(call shell_quote,$(NCCL_HOME)/include)
  # An install tree has lib/libnccl.so; the pip wheel (nvidia-nccl-cu13,
  # .../site-packages/nvidia/nccl) only lib/libnccl.so.2: link that file.
  NCCL_LIB_FOUND := $(shell for f in libnccl.so libnccl.so.2; do [ -e $(NCCL_Q)/lib/$$f ] && echo $$f && break; done)
  ifeq ($(NCCL_LIB_FOUND),libnccl.so)
    NCCL_LIBS := -L$(call shell_quote,$(NCCL_HOME)/lib) -lnccl
  else ifeq ($(NCCL_LIB_FOUND),libnccl.so.2)
    NCCL_LIBS := $(call shell_quote,$(NCCL_HOME)/lib/libnccl.so.2)
  else ifneq ($(filter-out help clean,$(or $(MAKECMDGOALS),all)),)
    $(error NCCL_HOME=$(NCCL_HOME) has neither lib/libnccl.so nor lib/libnccl.so.2)
  endif
  NCCL_LIBS += -Wl,-rpath,$(call shell_quote,$(NCCL_HOME)/lib)
else ifeq ($(shell $(CC) -print-file-name=libnccl.so),libnccl.so)
  # The compiler does not find libnccl.so by itself: use the copy in CUDA_HOME.
  NCCL_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl
else
  NCCL_LIBS := -lnccl
endif

# The CUDA runtime is linked statically (as nvcc does). Tests replace
# RUNTIME_LIBS with the host simulation. INSTRUMENTS_LIBS (CUPTI, cuBLAS)
# is set by instruments/instruments.mk, and empty in a lean build.
RUNTIME_LIBS ?= $(NCCL_LIBS) $(INSTRUMENTS_LIBS) $(CUDA_HOME)/lib64/libcudart_static.a -ldl -lrt
MODE_LIBS ?=

# Per-thread default streams: ranks that are threads sharing one GPU share
# its CUDA context, and a plain cudaMemcpy on the legacy default stream
# would wait for the other ranks' queued collectives, which wait for this
# rank: a deadlock. With this flag cudaMemcpy waits only for its own thread.
PTDS_CPPFLAGS := -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1

# -idirafter: system headers (a system nccl.h) win over CUDA_HOME's.
ALL_CPPFLAGS := -I$(TOOLCHAIN_DIR)/include $(NCCL_CPPFLAGS) $(PTDS_CPPFLAGS) \
                -idirafter $(CUDA_HOME)/include $(MODE_CPPFLAGS) -D_GNU_SOURCE
WARNINGS := -std=c11 -Wall -Wextra -Werror

Q := $(if $(filter 1,$(V)),,@)

# record_build_inputs FILE,TEXT: FILE records the build inputs TEXT (lines
# NAME=value). It is rewritten only when TEXT differs, so that what depends
# on FILE is rebuilt exactly when an input changed; the change is said, the
# old and new values too with V=1. Expands to nothing.
record_build_inputs = $(shell mkdir -p $(dir $(1)))$(file >$(1).new,$(2))$(call say_config,$(1),$(shell \
  f=$(1); if cmp -s "$$f.new" "$$f"; then rm -f "$$f.new"; exit; fi; \
  if [ -e "$$f" ]; then \
    if [ "$(V)" = 1 ]; then diff "$$f" "$$f.new" | grep '^[<>]' | tr '\n' ' '; \
    else diff "$$f" "$$f.new" | sed -n 's/^> \([A-Z_]*\)=.*/\1/p' | tr '\n' ' '; fi; \
    echo changed; \
  fi; mv -f "$$f.new" "$$f"))
say_config = $(if $(2),$(info $(empty)  CONFIG  $(1): $(2)))
