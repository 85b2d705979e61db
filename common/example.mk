# Build rules shared by the examples. An example's Makefile sets PROGRAM and
# includes this file: main.c plus common/src/*.c make ./$(PROGRAM).
#   make [MPI=1] [NCCL_HOME=dir] [CUDA_HOME=dir] [V=1] [BUILD_DIR=dir] [BIN=path]

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

# Switching MPI=0/1 must relink: the binary depends on a file that records
# the mode and changes only when the mode does.
MODE_FILE := $(BUILD_DIR)/mode
# (Not for `make help` or `make clean`, which must write nothing.)
ifeq ($(filter help clean,$(MAKECMDGOALS)),)
$(shell mkdir -p $(BUILD_DIR) && { [ "`cat $(MODE_FILE) 2>/dev/null`" = "$(MODE)" ] || echo $(MODE) > $(MODE_FILE); })
endif

.PHONY: all clean install help
all: $(BIN)

# Object files and archives named in RUNTIME_LIBS (the tests' simulation)
# relink the program when they change.
$(BIN): $(OBJS) $(MODE_FILE) $(wildcard $(filter %.o %.a,$(RUNTIME_LIBS)))
	@echo "  LD      $@ ($(MODE))"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) $(RUNTIME_LIBS) $(MODE_LIBS) -pthread -lm

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
