# Build rules shared by the examples. An example's Makefile sets PROGRAM and
# includes this file: main.c plus common/src/*.c make ./$(PROGRAM).
#   make [MPI=1] [NCCL_HOME=dir] [CUDA_HOME=dir] [V=1] [BUILD_DIR=dir] [BIN=path]
#   make test [NP=2]   build and run the example, as NCCL's examples do

COMMON_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
include $(COMMON_DIR)/toolchain.mk

BUILD_DIR ?= build
BIN ?= $(PROGRAM)

OBJ_DIR := $(BUILD_DIR)/$(MODE)
# common/src/*.c, common/src/bench/*.c (--bench), and the one transport of
# this mode (threads or mpi).
OBJS := $(OBJ_DIR)/main.o \
        $(patsubst $(COMMON_DIR)/src/%.c,$(OBJ_DIR)/common/%.o,$(wildcard $(COMMON_DIR)/src/*.c $(COMMON_DIR)/src/bench/*.c)) \
        $(OBJ_DIR)/common/transport/$(TRANSPORT).o

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
LDFLAGS=$(LDFLAGS)
NCCL_HOME=$(NCCL_HOME)
CUDA_HOME=$(CUDA_HOME)
$(if $(filter mpi,$(MODE)),MPI_HOME=$(MPI_HOME))
LIBS=$(RUNTIME_LIBS) $(MODE_LIBS)
endef
CONFIG_FILES := $(OBJ_DIR)/config $(BUILD_DIR)/config
ifeq ($(filter help clean,$(MAKECMDGOALS)),)
  $(foreach c,$(CONFIG_FILES),$(call record_build_inputs,$(c),$(BUILD_INPUTS)))
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

# Object files and archives named in RUNTIME_LIBS (the tests' simulation)
# relink the program when they change.
$(BIN): $(OBJS) $(BUILD_DIR)/config $(wildcard $(filter %.o %.a,$(RUNTIME_LIBS)))
	@echo "  LD      $@ ($(MODE))"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(RUNTIME_LIBS) $(MODE_LIBS) -pthread -lm

$(OBJ_DIR)/main.o: main.c $(OBJ_DIR)/config
	@echo "  CC      $<"
	$(Q)mkdir -p $(@D) && $(CC) $(ALL_CPPFLAGS) $(WARNINGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(OBJ_DIR)/common/%.o: $(COMMON_DIR)/src/%.c $(OBJ_DIR)/config
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
	@echo "make test       build and run it (MPI=1: under mpirun -np NP, default 2)"
	@echo "make clean      remove what was built"
	@echo "make install    copy $(PROGRAM) to \$$(DESTDIR)\$$(PREFIX)/bin (PREFIX=$(PREFIX))"
	@echo "variables: MPI=1 MPI_HOME=dir NCCL_HOME=dir CUDA_HOME=dir CC= CFLAGS= LDFLAGS= V=1 NP=2"
