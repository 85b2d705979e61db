# Top-level Makefile: builds each example in its own directory and leaves the
# programs runnable here (./allreduce_sm, ./allgather_ce).
#   make [01_allreduce|02_allgather|03_allreduce_lsa|04_allreduce_fast|all] [MPI=1] [NCCL_HOME=..] [CUDA_HOME=..]
#   make test | test-gpu | test-kernels | test-facts | test-properties | test-faults | test-nccl-matrix | test-without-mpi | test-under-load | test-slurm | test-no-cuda | test-mutants | test-coverage | run-examples [NP=2] | clean | install [PREFIX=..] [DESTDIR=..] | help
# Variables given on the command line reach the example Makefiles as well.

EXAMPLES := 01_allreduce 02_allgather
PROGRAM_01_allreduce := allreduce_sm
PROGRAM_02_allgather := allgather_ce
# The device API lessons need NCCL >= 2.30.7 and nvcc: built when named.
PROGRAM_03_allreduce_lsa := allreduce_lsa
PROGRAM_04_allreduce_fast := allreduce_fast

.PHONY: all $(EXAMPLES) 03_allreduce_lsa 04_allreduce_fast test test-gpu test-kernels test-facts test-properties test-faults test-nccl-matrix test-without-mpi test-mutants test-under-load test-slurm test-no-cuda test-coverage run-examples clean install help
all: $(EXAMPLES)

$(EXAMPLES) 03_allreduce_lsa 04_allreduce_fast:
	$(MAKE) --no-print-directory -C $@/c
	cp -f $@/c/$(PROGRAM_$@) $(PROGRAM_$@)

# make test SUITE=bench: one file of tests/suites alone (tests/README.md).
test:
	$(if $(SUITE),TEST_SUITE=$(SUITE) )bash tests/run_tests.sh

test-faults:
	bash tests/fault_matrix.sh

# Kernels on the simulated GPU's memory model at 2, 4 and 8 ranks, threads
# and MPI, seeds 1 to 20 (tests/suites/42-kernels.sh; make test runs a few).
test-kernels:
	KERNEL_MATRIX=full TEST_RUN_LIMIT=$${TEST_RUN_LIMIT:-3600} TEST_SUITE=kernels bash tests/run_tests.sh

# The simulation against every record of docs/facts, those of 4 ranks and
# of other machines too (tests/suites/64-facts.sh; make test checks those
# of 1 and 2 ranks).
test-facts:
	FACTS_MATRIX=full TEST_SUITE=facts bash tests/run_tests.sh

# The device API lessons at 1 to 8 ranks and counts of every remainder
# modulo 4 and the rank count, against the oracle
# (tests/oracles/properties.py; make test runs a few).
test-properties:
	PROPERTY_MATRIX=full TEST_FILTER='^(lsa|fast)/properties/' bash tests/run_tests.sh

# What only a machine with a GPU can check: the suite's GPU cases,
# compute-sanitizer, the docs' GPU blocks, What ran under PyTorch where it
# is (tools/check_gpu_machine.sh).
test-gpu:
	bash tools/check_gpu_machine.sh

# The oldest and newest NCCL wheels on PyPI: the programs built against
# each (allreduce_lsa with nvcc and CMake); NCCL_MATRIX_DOWNLOAD=1
# downloads a missing wheel (tests/suites/15-nccl-matrix.sh).
test-nccl-matrix:
	TEST_SUITE=nccl-matrix bash tests/run_tests.sh

# The suite beside a CPU hog of twice the cores: verdicts must not depend on load.
test-under-load:
	bash tests/under_load.sh

# How many plausible one-line bugs the suite catches: the listed ones and a
# seeded sample of generated ones (tests/mutants/; MUTANT_JOBS, MUTANT_SEED,
# MUTANTS_SAMPLE).
test-mutants:
	bash tests/mutants.sh

# The suite once more, measured (gcc --coverage): line and branch coverage
# per file of common/, instruments/, tools/whatran and tests/sim, and the
# simulation's rule sites and the verdict phrases no case reaches
# (tests/coverage.sh; gcovr from pip the first time).
test-coverage:
	bash tests/coverage.sh

# The programs under a Slurm cluster of its own, as an unprivileged user,
# from a path with spaces (as root; tests/slurm.sh).
test-slurm:
	bash tests/slurm.sh

# tools/simulate.sh built from two pip wheels' headers alone (no CUDA
# install; tests/no_cuda.sh).
test-no-cuda:
	bash tests/no_cuda.sh

# The suite as on a machine without Open MPI (MPI hidden from PATH).
test-without-mpi:
	bash tests/without_mpi.sh

# Each example's own `make test`: build it and run it once on this machine's
# GPUs (MPI=1: under mpirun -np NP). The suite is `make test`.
run-examples:
	for e in $(EXAMPLES); do $(MAKE) --no-print-directory -C $$e/c test || exit; done

clean:
	for e in $(EXAMPLES) 03_allreduce_lsa 04_allreduce_fast; do $(MAKE) --no-print-directory -C $$e/c clean || exit; done
	rm -f $(foreach e,$(EXAMPLES) 03_allreduce_lsa 04_allreduce_fast,$(PROGRAM_$(e)))
	rm -rf tests/build tools/nccl_facts tools/nccl_facts.config

install:
	for e in $(EXAMPLES); do $(MAKE) --no-print-directory -C $$e/c install || exit; done

help:
	@echo "make                 build both examples (pthread mode) into ./"
	@echo "make 01_allreduce    build ./allreduce_sm"
	@echo "make 02_allgather    build ./allgather_ce"
	@echo "make 03_allreduce_lsa  build ./allreduce_lsa (NCCL >= 2.30.7 headers, nvcc; not part of make)"
	@echo "make 04_allreduce_fast build ./allreduce_fast (the same needs; not part of make)"
	@echo "make MPI=1           build for mpirun (one process per GPU)"
	@echo "make test            run the test suite (no GPU needed; about 5 minutes on 2 cores)"
	@echo "make test-gpu        what needs a GPU: the GPU cases, compute-sanitizer, the docs' GPU blocks, PyTorch where it is (NCCL_HOME=dir for allreduce_lsa)"
	@echo "make test-kernels    kernels on the simulated GPU's memory at 2-8 ranks, 20 seeds (no GPU needed; half an hour)"
	@echo "make test-facts      the simulation against every record of docs/facts, 4 ranks and other machines too (no GPU needed; a minute)"
	@echo "make test-properties the device API lessons at 1-8 ranks, counts of every remainder mod 4 and ranks (no GPU needed; minutes)"
	@echo "make test-faults     the whole fault matrix (no GPU needed; minutes)"
	@echo "make test-nccl-matrix  the programs against the oldest and newest NCCL wheels (downloads them with NCCL_MATRIX_DOWNLOAD=1)"
	@echo "make test-without-mpi  the suite with Open MPI hidden from PATH (MPI cases skipped)"
	@echo "make test-under-load the suite beside a CPU hog of twice the cores (minutes more)"
	@echo "make test-slurm      the programs under a Slurm cluster of its own (as root; Slurm and munge installed)"
	@echo "make test-no-cuda    tools/simulate.sh built from pip wheels' headers alone (downloads them)"
	@echo "make test-mutants    the one-line bugs of tests/mutants/mutants.txt and a sample of generated ones against the cases that should catch them (no GPU needed; up to half an hour)"
	@echo "make test-coverage   the suite once, measured: line and branch coverage per file, rule sites and verdict phrases no case reaches (installs gcovr with pip)"
	@echo "make run-examples    build and run each example once (needs a GPU; MPI=1: mpirun -np NP, default 2)"
	@echo "make install         install to \$$(DESTDIR)\$$(PREFIX)/bin (default /usr/local)"
	@echo "make clean           remove everything built"
	@echo "make LEAN=1          the lessons without instruments/ (no watchdog, What ran, --bench; no CUPTI, cuBLAS)"
	@echo "variables: MPI=1 LEAN=1 MPI_HOME=dir NCCL_HOME=dir CUDA_HOME=dir CC= CFLAGS= LDFLAGS= V=1 NP=2 CUDA_ARCH='80 90' NVCC="
