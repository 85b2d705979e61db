# Toolchain and build rules shared by every example. An example's Makefile
# sets PROGRAM and includes this file; everything else is here.
#
#   make [MPI=1] [MPI_HOME=dir] [NCCL_HOME=dir] [CUDA_HOME=dir] [V=1]
#
# NCCL_HOME unset: nccl.h and libnccl come from the compiler's default paths
# (e.g. /usr/include and /usr/lib/x86_64-linux-gnu), else from CUDA_HOME.
# NCCL_HOME set: its include/ and lib/, with an rpath so the program finds it.

COMMON_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?=
MPI ?= 0
MPI_HOME ?=
PREFIX ?= /usr/local
DESTDIR ?=
CFLAGS ?= -O2 -g
LDFLAGS ?=
BUILD_DIR ?= build
BIN ?= $(PROGRAM)

ifeq ($(MPI),1)
  MODE := mpi
  MPICC ?= $(if $(MPI_HOME),$(MPI_HOME)/bin/mpicc,mpicc)
  CC := $(MPICC)
  MODE_CPPFLAGS := -DUSE_MPI
else ifeq ($(MPI),0)
  MODE := pthread
  MODE_CPPFLAGS :=
else
  $(error MPI=$(MPI): use MPI=1 for the MPI build or MPI=0 (default) for threads)
endif

ifneq ($(NCCL_HOME),)
  NCCL_CPPFLAGS := -I$(NCCL_HOME)/include
  NCCL_LDFLAGS := -L$(NCCL_HOME)/lib -Wl,-rpath,$(NCCL_HOME)/lib
else ifeq ($(shell $(CC) -print-file-name=libnccl.so),libnccl.so)
  # The compiler does not find libnccl.so by itself: use the copy in CUDA_HOME.
  NCCL_LDFLAGS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
endif

# The CUDA runtime is linked statically (as nvcc does), so the only shared
# library to find at run time is NCCL. Tests replace RUNTIME_LIBS with the
# host simulation.
RUNTIME_LIBS ?= $(NCCL_LDFLAGS) -lnccl $(CUDA_HOME)/lib64/libcudart_static.a -ldl -lrt

# -idirafter: system headers (a system nccl.h) win over CUDA_HOME's.
ALL_CPPFLAGS := -I$(COMMON_DIR)/include $(NCCL_CPPFLAGS) \
                -idirafter $(CUDA_HOME)/include $(MODE_CPPFLAGS) -D_GNU_SOURCE
WARNINGS := -std=c11 -Wall -Wextra -Werror

OBJ_DIR := $(BUILD_DIR)/$(MODE)
OBJS := $(OBJ_DIR)/main.o \
        $(patsubst $(COMMON_DIR)/src/%.c,$(OBJ_DIR)/common/%.o,$(wildcard $(COMMON_DIR)/src/*.c))

# Switching MPI=0/1 must relink: the binary depends on a file that records
# the mode and changes only when the mode does.
MODE_FILE := $(BUILD_DIR)/mode
$(shell mkdir -p $(BUILD_DIR) && { [ "`cat $(MODE_FILE) 2>/dev/null`" = "$(MODE)" ] || echo $(MODE) > $(MODE_FILE); })

Q := $(if $(filter 1,$(V)),,@)

.PHONY: all clean install help
all: $(BIN)

$(BIN): $(OBJS) $(MODE_FILE)
	@echo "  LD      $@ ($(MODE))"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(RUNTIME_LIBS) -pthread -lm

$(OBJ_DIR)/main.o: main.c
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(OBJ_DIR)/common/%.o: $(COMMON_DIR)/src/%.c
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(OBJS:.o=.d)

clean:
	rm -rf $(BUILD_DIR) $(BIN)

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/$(PROGRAM)

help:
	@echo "make [all]      build ./$(PROGRAM) (threads; MPI=1 for one process per GPU)"
	@echo "make clean      remove what was built"
	@echo "make install    copy $(PROGRAM) to \$$(DESTDIR)\$$(PREFIX)/bin (PREFIX=$(PREFIX))"
	@echo "variables: MPI=1 MPI_HOME=dir NCCL_HOME=dir CUDA_HOME=dir CC= CFLAGS= LDFLAGS= V=1"
