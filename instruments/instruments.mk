# The instruments' build: included by common/example.mk unless LEAN=1, and
# by tools/Makefile. Sets INSTRUMENTS_SRCS (the files of this build mode,
# $(TRANSPORT) from toolchain.mk), INSTRUMENTS_CPPFLAGS (for those files
# only) and INSTRUMENTS_LIBS (linked into the program).
#
# --bench uses CUPTI (which engine ran) and cuBLAS (--overlap) when the
# toolkit has them; HAVE_CUPTI=0 or HAVE_CUBLAS=0 builds without.

INSTRUMENTS_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

CUPTI_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcupti.so $(CUDA_HOME)/extras/CUPTI/lib64/libcupti.so))
HAVE_CUPTI ?= $(if $(and $(wildcard $(CUDA_HOME)/include/cupti.h),$(CUPTI_LIB)),1,0)
HAVE_CUBLAS ?= $(if $(wildcard $(CUDA_HOME)/include/cublas_v2.h),1,0)
INSTRUMENTS_LIBS :=
ifeq ($(HAVE_CUPTI),1)
  INSTRUMENTS_LIBS += -L$(dir $(CUPTI_LIB)) -Wl,-rpath,$(dir $(CUPTI_LIB)) -lcupti
endif
ifeq ($(HAVE_CUBLAS),1)
  INSTRUMENTS_LIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas
endif

# Every file of src/ and src/bench/, and the watchdog's peers of this mode
# (peers_threads.c or peers_mpi.c).
INSTRUMENTS_SRCS := $(filter-out $(INSTRUMENTS_DIR)/src/peers_%.c,$(wildcard $(INSTRUMENTS_DIR)/src/*.c)) \
                    $(wildcard $(INSTRUMENTS_DIR)/src/bench/*.c) \
                    $(INSTRUMENTS_DIR)/src/peers_$(TRANSPORT).c
INSTRUMENTS_CPPFLAGS := -I$(INSTRUMENTS_DIR)/include \
                        -DHAVE_CUPTI=$(HAVE_CUPTI) -DHAVE_CUBLAS=$(HAVE_CUBLAS)
