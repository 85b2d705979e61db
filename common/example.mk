# Build rules shared by the examples. An example's Makefile sets PROGRAM and
# includes this file: main.c plus common/src/*.c (and instruments/) make
# ./$(PROGRAM).
#   make [MPI=1] [LEAN=1] [NCCL_HOME=dir] [CUDA_HOME=dir] [V=1] [BUILD_DIR=dir] [BIN=path]
#   make test [NP=2]   build and run the example, as NCCL's examples do

COMMON_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
include $(COMMON_DIR)/toolchain.mk

BUILD_DIR ?= build
BIN ?= $(PROGRAM)

OBJ_DIR := $(BUILD_DIR)/$(MODE)

# The instruments (the watchdog, What ran, --bench) live beside common/ in
# instruments/. LEAN=1, or a copy of common/ without instruments/, links
# common/src/lean/no_instruments.c in their place: the lesson alone, with
# neither CUPTI nor cuBLAS.
INSTRUMENTS_MK := $(wildcard $(dir $(COMMON_DIR))instruments/instruments.mk)
LEAN ?= $(if $(INSTRUMENTS_MK),0,1)
ifeq ($(LEAN),1)
  SEAM_OBJS := $(OBJ_DIR)/common/lean/no_instruments.o
  INSTRUMENTS_LIBS :=
else ifeq ($(LEAN),0)
  ifeq ($(INSTRUMENTS_MK),)
    $(error LEAN=0, but $(dir $(COMMON_DIR))instruments/instruments.mk is missing: build with LEAN=1, or copy instruments/ beside common/)
  endif
  include $(INSTRUMENTS_MK)
  SEAM_OBJS := $(patsubst $(INSTRUMENTS_DIR)/src/%.c,$(OBJ_DIR)/instruments/%.o,$(INSTRUMENTS_SRCS))
else
  $(error LEAN=$(LEAN): use LEAN=1 for the lesson without instruments or LEAN=0 (default))
endif

# The lesson: main.c, or main.cu where it has a kernel of its own
# (03_allreduce_lsa). nvcc compiles it for CUDA_ARCH (compute capabilities:
# code for each, and PTX of the last for newer GPUs).
MAIN := $(if $(wildcard main.cu),main.cu,main.c)
NVCC ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= 80 90
CU_GENCODE := $(foreach a,$(CUDA_ARCH),-gencode arch=compute_$(a),code=sm_$(a)) \
              -gencode arch=compute_$(lastword $(CUDA_ARCH)),code=compute_$(lastword $(CUDA_ARCH))
# -Wno-missing-field-initializers: NCCL's own initializers
# (NCCL_COMM_PROPERTIES_INITIALIZER) name only the struct's first fields.
CU_FLAGS := -std=c++17 $(CU_GENCODE) \
            -Xcompiler -Wall,-Wextra,-Werror,-Wno-missing-field-initializers \
            $(filter-out -std=% -W%,$(CFLAGS)) -MMD -MP
CU_CPPFLAGS := -I$(TOOLCHAIN_DIR)/include $(if $(NCCL_HOME),-isystem $(call shell_quote,$(NCCL_HOME)/include)) \
               -isystem $(CUDA_HOME)/include $(PTDS_CPPFLAGS) -D_GNU_SOURCE
MAIN_LIBS := $(if $(filter main.cu,$(MAIN)),-lstdc++)

# main.c, common/src/*.c, the one transport of this mode (threads or mpi)
# and the instruments (or the file that stands in for them).
OBJS := $(OBJ_DIR)/main.o \
        $(patsubst $(COMMON_DIR)/src/%.c,$(OBJ_DIR)/common/%.o,$(wildcard $(COMMON_DIR)/src/*.c)) \
        $(OBJ_DIR)/common/transport/$(TRANSPORT).o $(SEAM_OBJS)

# Every build input that changes the objects or the program, recorded per
# build: a change of any (MPI, NCCL_HOME, CUDA_HOME, MPI_HOME, CC, CFLAGS,
# LDFLAGS, ...) rewrites the record, and what depends on it is rebuilt, in
# both directions. $(OBJ_DIR)/config is what the objects were compiled with
# (one per mode), $(BUILD_DIR)/config what the program was last linked with.
# (Not for `make help` or `make clean`, which must write nothing.)
define BUILD_INPUTS
MODE=$(MODE)
CC=$(CC)
CFLAGS=$(CFLAGS)
CPPFLAGS=$(ALL_CPPFLAGS)
LEAN=$(LEAN)
INSTRUMENTS_CPPFLAGS=$(INSTRUMENTS_CPPFLAGS)
LDFLAGS=$(LDFLAGS)
NCCL_HOME=$(NCCL_HOME)
CUDA_HOME=$(CUDA_HOME)
$(if $(filter main.cu,$(MAIN)),NVCC=$(NVCC) CUDA_ARCH=$(CUDA_ARCH) CU_COMPILE=$(CU_COMPILE))
$(if $(filter mpi,$(MODE)),MPI_HOME=$(MPI_HOME))
LIBS=$(RUNTIME_LIBS) $(MODE_LIBS)
endef
CONFIG_FILES := $(OBJ_DIR)/config $(BUILD_DIR)/config
ifeq ($(filter help clean,$(MAKECMDGOALS)),)
  $(foreach c,$(CONFIG_FILES),$(call record_build_inputs,$(c),$(BUILD_INPUTS)))
endif

# MIN_NCCL (an example's Makefile sets it, as its CMakeLists.txt does): an
# nccl.h older than that stops the build here with one line, before any
# compiler error. The header's version is its NCCL_VERSION_CODE.
ifneq ($(and $(MIN_NCCL),$(if $(filter help clean,$(MAKECMDGOALS)),,build)),)
  NCCL_H_CODE := $(shell printf '\043include <nccl.h>\nNCCL_VERSION_CODE\n' | $(CC) $(if $(and $(filter main.cu,$(MAIN)),$(if $(CU_COMPILE),,nvcc)),$(CU_CPPFLAGS),$(ALL_CPPFLAGS)) -E -P -x c - 2>/dev/null | tail -n 1)
  MIN_NCCL_CODE := $(shell echo '$(MIN_NCCL)' | awk -F. '{ printf "%d", $$1 * 10000 + $$2 * 100 + $$3 }')
  ifeq ($(shell [ "$(NCCL_H_CODE)" -lt "$(MIN_NCCL_CODE)" ] 2>/dev/null && echo old),old)
    $(error $(PROGRAM) needs NCCL >= $(MIN_NCCL), and the nccl.h this build finds ($(if $(NCCL_HOME),in NCCL_HOME=$(NCCL_HOME),in the default places)) is $(shell echo '$(NCCL_H_CODE)' | awk '{ printf "%d.%d.%d", $$1 / 10000, $$1 % 10000 / 100, $$1 % 100 }'): build with a newer NCCL (make NCCL_HOME=dir))
  endif
endif

.PHONY: all clean install help test
all: $(BIN)

# Builds and runs the example once: the pthread build on every visible GPU
# (one thread each), the MPI build under mpirun with NP processes. Without a
# GPU it fails with the program's own one-line message.
NP ?= 2
BIN_PATH := $(if $(filter /%,$(BIN)),$(BIN),./$(BIN))
ifeq ($(MODE),mpi)
  RUN_EXAMPLE := $(if $(MPI_HOME),$(MPI_HOME)/bin/mpirun,mpirun) -np $(NP) $(BIN_PATH)
else
  RUN_EXAMPLE := $(BIN_PATH)
endif
test: $(BIN)
	$(RUN_EXAMPLE)

# Lazy binding (-z lazy): NCCL's functions are looked up at their first
# call. A loaded NCCL older than a function the lesson calls
# (ncclCommQueryProperties is in 2.29.2 and later) is then refused by the
# program's version check, in one line on every rank, instead of by the
# dynamic loader at start ("symbol lookup error"), as Ubuntu's gcc, which
# binds everything at start by default (-z now), would have it. Your own
# LDFLAGS come after it and win.
LAZY_LDFLAGS := -Wl,-z,lazy

# Object files and archives named in RUNTIME_LIBS (the tests' simulation)
# relink the program when they change.
$(BIN): $(OBJS) $(BUILD_DIR)/config $(wildcard $(filter %.o %.a,$(RUNTIME_LIBS)))
	@echo "  LD      $@ ($(MODE))"
	$(Q)$(CC) $(CFLAGS) $(LAZY_LDFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(RUNTIME_LIBS) $(MODE_LIBS) $(MAIN_LIBS) -pthread -lm

ifeq ($(MAIN),main.cu)
# A lesson with its own kernel (main.cu) is compiled by nvcc for the GPU
# architectures in CUDA_ARCH, and linked with the C++ runtime. NCCL's
# headers (with the device API, nccl_device.h) are system headers here,
# ahead of the nccl.h the toolkit may carry. The tests' simulation compiles
# it as host C++ instead (CU_COMPILE: tests/Makefile).
$(OBJ_DIR)/main.o: main.cu $(OBJ_DIR)/config
	@echo "  $(if $(CU_COMPILE),CXX ,NVCC)    $<"
	$(Q)mkdir -p $(@D) && $(if $(CU_COMPILE),$(CU_COMPILE) $(ALL_CPPFLAGS) $(CFLAGS),$(NVCC) $(CU_CPPFLAGS) $(CU_FLAGS)) -c -o $@ $<
else
$(OBJ_DIR)/main.o: main.c $(OBJ_DIR)/config
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<
endif

$(OBJ_DIR)/common/%.o: $(COMMON_DIR)/src/%.c $(OBJ_DIR)/config
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# Only the instruments' own files see their headers (common/ cannot).
$(OBJ_DIR)/instruments/%.o: $(INSTRUMENTS_DIR)/src/%.c $(OBJ_DIR)/config
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(INSTRUMENTS_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(OBJS:.o=.d)

clean:
	rm -rf $(BUILD_DIR) $(BIN)

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/$(PROGRAM)

help:
	@echo "make [all]      build ./$(PROGRAM) (threads; MPI=1 for one process per GPU)"
	@echo "make test       build and run it (MPI=1: under mpirun -np NP, default 2)"
	@echo "make clean      remove what was built"
	@echo "make install    copy $(PROGRAM) to \$$(DESTDIR)\$$(PREFIX)/bin (PREFIX=$(PREFIX))"
	@echo "variables: MPI=1 LEAN=1 MPI_HOME=dir NCCL_HOME=dir CUDA_HOME=dir CC= CFLAGS= LDFLAGS= V=1 NP=2"
