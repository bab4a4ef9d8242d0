# ddtk - dedispersion toolkit. GNU Make.
#
#   make            libddtk.a and every tool into bin/
#   make test       C unit tests and the bats suites
#   make check-sanitize   the same against an ASan+UBSan build (build/sanitize)
#   make fuzz       libFuzzer runs over the parsers (FUZZ_SECONDS each; clang)
#   make demo       the built-in demo observation
#   make bench      CPU benchmarks (bench/run, bench/scrunch, bench/fdas)
#   make install PREFIX=/usr/local   (DESTDIR=... to stage it; every GPU architecture;
#                   the Python package too)
#   make release    what make install installs, built in place
#   make CUDA=0     CPU-only build even where nvcc exists

PREFIX ?= /usr/local
CC ?= gcc
MARCH ?= -march=native
CFLAGS ?= -O3 $(MARCH) -g
# The library's layers, each a folder of src/: io (inputs, outputs and their
# files), engine (plans, streaming, wisdom), algos (the algorithms'
# descriptors), search (fdas, the single-pulse search and its plots), sim.
SRC_DIRS := src src/io src/engine src/algos src/search src/sim
SRC_INC := $(SRC_DIRS:%=-I%) -Icpu
CFLAGS += -std=gnu11 -Wall -Wextra -fopenmp -Iinclude $(SRC_INC)
# cfitsio reads PSRFITS (src/io/psrfits.c); CFITSIO_LIBS names a staged copy
# where the system has none (scripts/gpu-check).
CFITSIO_LIBS ?= -lcfitsio
LDLIBS = -lfftw3f -lfftw3f_omp $(CFITSIO_LIBS) -lm

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })
# Which GPUs to build for (the rule; README "Set-up"):
#  - make, make demo, make test: for the GPUs this machine has (their compute
#    capabilities, from nvidia-smi), or CPU only when it has none, even where
#    nvcc exists: a build for every architecture takes minutes per kernel file;
#  - make install and make release: every architecture (ALL_CUDA_ARCHS) when
#    nvcc exists, GPU or not, for machines other than this one;
#  - CUDA=0|1 and CUDA_ARCHS="80 90" given on the command line decide alone.
# Volta (sm_70) is gone from CUDA 13; Turing onwards, plus PTX for newer chips.
ALL_CUDA_ARCHS := 75 80 86 89 90
GPU_ARCHS := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null \
	| tr -d . | grep -E '^[0-9]+$$' | sort -u)
ifneq ($(filter install release,$(MAKECMDGOALS)),)
CUDA ?= $(if $(NVCC),1,0)
CUDA_ARCHS ?= $(ALL_CUDA_ARCHS)
else
CUDA ?= $(if $(and $(NVCC),$(GPU_ARCHS)),1,0)
CUDA_ARCHS ?= $(or $(GPU_ARCHS),$(ALL_CUDA_ARCHS))
endif
PTX_ARCH := $(lastword $(sort $(CUDA_ARCHS)))
NVCCFLAGS ?= -O3 -std=c++17 $(foreach a,$(CUDA_ARCHS),-gencode=arch=compute_$(a),code=sm_$(a)) \
	-gencode=arch=compute_$(PTX_ARCH),code=compute_$(PTX_ARCH)
NVCCFLAGS += -Iinclude $(SRC_INC) -Xcompiler -Wall,-Wextra,-fopenmp,-fPIC
build/cuda/cufft_load.o: NVCCFLAGS += -DDDTK_CUDA_LIBDIR='"$(CUDA_HOME)/lib64"'


SRC_C := $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c))
GPU_NONE_C := $(filter %gpu_none.c,$(SRC_C))
LIB_C := $(filter-out $(GPU_NONE_C),$(SRC_C)) $(wildcard cpu/*.c)
ifeq ($(CUDA),1)
LIB_CU := $(wildcard cuda/*.cu)
# The algorithms' descriptors name their GPU halves (src/engine/algo.h, DDTK_GPU_HALF).
CFLAGS += -DDDTK_CUDA
# The static CUDA runtime (CUDA_RUNTIME=static), and cuFFT loaded when fdas
# first uses it (cuda/cufft_load.cu): the tools need only the driver's
# libcuda at run time, none of the toolkit's shared libraries.
# CUDA_RUNTIME=shared links libcudart.so, which LD_PRELOAD shims can reach
# (test/fault/cudafault.c: multigpu.bats's pinning-fault test needs it).
CUDA_RUNTIME ?= static
ifeq ($(CUDA_RUNTIME),shared)
LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -ldl -lstdc++
else
LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
endif
else
LIB_C += $(GPU_NONE_C)
endif

LIB_OBJ := $(LIB_C:%.c=build/%.o) $(LIB_CU:%.cu=build/%.o)
# The command-line layer (option parsing, stderr handlers, progress bars, the
# dd_* main) is not libddtk: its own archive, linked into tools and tests.
CLI_C := $(wildcard tools/cli/*.c)
CLI_LIB := build/libddtkcli.a
CLI_FLAGS := -Itools/cli
TOOLS := $(patsubst tools/%.c,bin/%,$(wildcard tools/*.c))
# Shell tools: scripts/NAME with the library's version filled in.
SCRIPT_TOOLS := bin/ddsurvey
VERSION = $(shell sed -n 's/^\#define DDTK_VERSION "\(.*\)"/\1/p' include/ddtk.h)
UNIT_TESTS := $(patsubst test/unit/%.c,build/test/%,$(wildcard test/unit/*.c))
TEST_HELPERS := $(patsubst test/helpers/%.c,build/test/%,$(wildcard test/helpers/*.c)) \
                build/test/fault.so build/test/cudafault.so
EXAMPLES := $(patsubst examples/%.c,build/examples/%,$(wildcard examples/*.c))
HEADERS := $(wildcard include/*.h $(SRC_DIRS:%=%/*.h) cpu/*.h tools/cli/*.h)
# Switching CUDA=0/1 or the architectures rebuilds everything: objects depend
# on this stamp.
empty :=
space := $(empty) $(empty)
CONFIG_STAMP := build/config.cuda$(CUDA)$(if $(filter 1,$(CUDA)),-sm$(subst $(space),_,$(strip $(CUDA_ARCHS)))-$(CUDA_RUNTIME))
# The shared library beside libddtk.a, from the same objects (built
# position-independent): libddtk.so.VERSION, soname libddtk.so.MAJOR, and
# only ddtk_ symbols exported (src/libddtk.map).
SONAME = libddtk.so.$(firstword $(subst ., ,$(VERSION)))
SHLIB = libddtk.so.$(VERSION)
SHLIB_LINKS = $(SONAME) libddtk.so
LIBDIR ?= $(PREFIX)/lib

.PHONY: all release test test-build unit bats demo bench install clean deps vecreport
all: libddtk.a $(SHLIB_LINKS) $(TOOLS) $(SCRIPT_TOOLS)

$(CONFIG_STAMP):
	@mkdir -p build && rm -f build/config.cuda* && touch $@

build/%.o: %.c $(HEADERS) $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# Library objects serve the shared library too. Without semantic
# interposition GCC still inlines and calls the library's own functions directly.
$(LIB_OBJ): CFLAGS += -fPIC -fno-semantic-interposition

# Clamped before they are converted, the quantised samples never trap: without
# traps to keep, GCC vectorises the conversion (output.c's quantise).
build/src/io/output.o: CFLAGS += -fno-trapping-math
# The same for the RFI cleaner's replacement of flagged 8-bit samples (put8:
# the dither, the floor and the clamp of each, a third of the cleaning).
build/src/io/rfi.o: CFLAGS += -fno-trapping-math
# Its statistics and zero-DM sums rounded operation by operation, so that what
# it flags, clips and writes does not depend on -march's fused multiply-adds
# (as the search's and the DM list's): the same 786 series of htru 10 s either
# way today, and the same cleaning time (181-185 ms a run, one thread).
build/src/io/rfi.o: CFLAGS += -ffp-contract=off

# The search's arithmetic is rounded operation by operation (no fused
# multiply-adds where -march offers them), so its candidates do not depend on
# the machine, and a device search can reproduce them.
build/src/search/sps.o: CFLAGS += -ffp-contract=off
# Without traps to keep (the library never enables them), GCC vectorises the
# normalisation's guarded divisions; the values are IEEE's either way.
build/src/search/sps.o: CFLAGS += -fno-trapping-math
# Its device half does the same operations unfused, so the GPU's candidates are
# the CPU's (nvcc otherwise contracts a*b + c into fused multiply-adds).
build/cuda/sps_gpu.o: NVCCFLAGS += -fmad=false
# The device's RFI cleaner does the host's arithmetic (src/io/rfi_math.h) without
# fused multiply-adds, as rfi.o is built, for the host's flags and samples.
build/cuda/rfi_gpu.o: NVCCFLAGS += -fmad=false
# The tolerance DM list's recurrence (a*b + c terms) gives the same doubles in
# every build, fused multiply-adds or not (-march=native's FMA against the
# sanitizer build's none): the DMs are in the outputs' headers.
build/src/engine/dmlist.o: CFLAGS += -ffp-contract=off

build/%.o: %.cu $(HEADERS) $(wildcard cuda/*.cuh) $(CONFIG_STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

libddtk.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(SHLIB): $(LIB_OBJ) src/libddtk.map
	$(CC) -shared -fopenmp -Wl,-soname,$(SONAME) -Wl,--version-script=src/libddtk.map \
		-Wl,--no-undefined $(LIB_OBJ) -o $@ $(LDLIBS)

$(SONAME): $(SHLIB)
	ln -sf $< $@

libddtk.so: $(SONAME)
	ln -sf $< $@

$(CLI_LIB): $(CLI_C:%.c=build/%.o)
	rm -f $@
	ar rcs $@ $^

# spplot draws with cairo (and the test helper that decodes its PNGs reads
# them with cairo): only those two link it.
CAIRO_CFLAGS ?= $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS ?= $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)
bin/spplot build/test/pngpeak: CFLAGS += $(CAIRO_CFLAGS)
bin/spplot build/test/pngpeak: LDLIBS += $(CAIRO_LIBS)

bin/%: tools/%.c libddtk.a $(CLI_LIB) $(HEADERS)
	@mkdir -p bin
	$(CC) $(CFLAGS) $(CLI_FLAGS) $< -o $@ $(CLI_LIB) libddtk.a $(LDLIBS)

bin/%: scripts/% include/ddtk.h
	@mkdir -p $(dir $@)
	sed 's/@DDTK_VERSION@/$(VERSION)/' $< > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@

build/test/%: test/unit/%.c libddtk.a $(CLI_LIB) $(HEADERS) $(wildcard test/unit/*.h test/helpers/*.h)
	@mkdir -p build/test
	$(CC) $(CFLAGS) $(CLI_FLAGS) $< -o $@ $(CLI_LIB) libddtk.a $(LDLIBS)

build/test/%: test/helpers/%.c libddtk.a $(CLI_LIB) $(HEADERS) $(wildcard test/helpers/*.h)
	@mkdir -p build/test
	$(CC) $(CFLAGS) $(CLI_FLAGS) $< -o $@ $(CLI_LIB) libddtk.a $(LDLIBS)

# Examples see include/ only, as <ddtk/...> (build/include/ddtk is include/):
# they prove the installed headers are enough. test/install.bats builds them
# again with pkg-config against an installed shared library.
build/examples/%: examples/%.c libddtk.a $(wildcard include/*.h) build/include/ddtk
	@mkdir -p build/examples
	$(CC) -O2 -std=gnu11 -Wall -Wextra -fopenmp -Ibuild/include $< -o $@ libddtk.a $(LDLIBS)

build/include/ddtk:
	@mkdir -p build/include
	ln -sfn ../../include $@

deps:
	@scripts/ensure-deps

# Everything the suites run: tools, unit tests, helpers (the fault shims
# included) and examples; device scripts build this too.
test-build: all $(UNIT_TESTS) $(TEST_HELPERS) $(EXAMPLES)

test: deps
	@$(MAKE) --no-print-directory test-build
	@scripts/run-tests $(UNIT_TESTS) $(EXAMPLES)

# The demo builds only what it runs.
demo: deps
	@$(MAKE) --no-print-directory $(if $(findstring j,$(MAKEFLAGS)),,-j$(shell nproc)) \
		bin/fbsim bin/fbinfo bin/dd_direct build/test/timpeak
	@scripts/demo

# The library and tools for every GPU architecture (see CUDA_ARCHS above).
release: all

# CPU benchmarks: dd_direct (htru, 100-DM sweep), time scrunching, fdas.
bench: deps
	@$(MAKE) --no-print-directory all $(TEST_HELPERS)
	@bench/run && bench/scrunch && bench/fdas

# Show which loops of the CPU kernels the compiler vectorised.
vecreport:
	$(CC) $(CFLAGS) -fopt-info-vec-optimized -c cpu/direct.c -o /dev/null

# ddtk.pc: the shared library for pkg-config --libs, the static one's
# dependencies (this build's LDLIBS) in Libs.private for --static. The Python
# package goes where python3 looks under PREFIX (scripts/install-python;
# PYTHONDIR= to choose).
PYTHONDIR ?=
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/ddtk $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(TOOLS) $(SCRIPT_TOOLS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 libddtk.a $(DESTDIR)$(LIBDIR)
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)
	ln -sf $(SHLIB) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libddtk.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@LIBS_PRIVATE@|$(LDLIBS) -fopenmp|' src/ddtk.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/ddtk.pc
	install -m 644 include/*.h $(DESTDIR)$(PREFIX)/include/ddtk
	install -m 644 man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1
	@scripts/install-python '$(DESTDIR)' '$(LIBDIR)' '$(PYTHONDIR)'

clean:
	rm -rf build bin libddtk.a libddtk.so* test/tmp

# The LD_PRELOAD shims (TEST_HELPERS, above) that fail one rename or fsync on
# demand (test/commit.bats) and the pinning of GPU outputs (test/multigpu.bats).
build/test/fault.so build/test/cudafault.so: build/test/%.so: test/fault/%.c
	@mkdir -p build/test
	$(CC) -shared -fPIC -O2 -Wall -Wextra $< -o $@ -ldl

# ---- sanitizers -------------------------------------------------------------------
# make check-sanitize: an ASan+UBSan copy of the library, tools, unit tests and
# helpers in build/sanitize (CPU only, its own objects), and the whole suite
# run against it. Any sanitizer report fails the process with status 86.
SAN_DIR := build/sanitize
SAN_CC ?= $(CC)
SAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all -std=gnu11 -Wall -Wextra -fopenmp -Iinclude $(SRC_INC)
SAN_LIB_C := $(SRC_C) $(wildcard cpu/*.c)
SAN_OBJ := $(SAN_LIB_C:%.c=$(SAN_DIR)/%.o)
SAN_CLI := $(SAN_DIR)/libddtkcli.a
SAN_TOOLS := $(patsubst tools/%.c,$(SAN_DIR)/bin/%,$(wildcard tools/*.c)) \
	$(SCRIPT_TOOLS:bin/%=$(SAN_DIR)/bin/%)
SAN_UNITS := $(patsubst test/unit/%.c,$(SAN_DIR)/test/%,$(wildcard test/unit/*.c))
SAN_HELPERS := $(patsubst test/helpers/%.c,$(SAN_DIR)/test/%,$(wildcard test/helpers/*.c)) \
	$(SAN_DIR)/test/fault.so
SAN_ENV := ASAN_OPTIONS=exitcode=86:detect_leaks=1:verify_asan_link_order=0 \
	LSAN_OPTIONS=exitcode=86:suppressions=$(CURDIR)/test/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=86

.PHONY: sanitize check-sanitize
sanitize: $(SAN_TOOLS) $(SAN_UNITS) $(SAN_HELPERS)

check-sanitize: deps
	@$(MAKE) --no-print-directory sanitize
	@$(SAN_ENV) DDTK_BIN=$(CURDIR)/$(SAN_DIR)/bin DDTK_TEST_BIN=$(CURDIR)/$(SAN_DIR)/test \
		scripts/run-tests $(SAN_UNITS)

$(SAN_DIR)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) -c $< -o $@

$(SAN_DIR)/libddtk.a: $(SAN_OBJ)
	rm -f $@
	ar rcs $@ $^

$(SAN_CLI): $(CLI_C:%.c=$(SAN_DIR)/%.o)
	rm -f $@
	ar rcs $@ $^

$(SAN_DIR)/bin/%: scripts/% include/ddtk.h
	@mkdir -p $(dir $@)
	sed 's/@DDTK_VERSION@/$(VERSION)/' $< > $@.tmp && chmod 755 $@.tmp && mv $@.tmp $@

$(SAN_DIR)/bin/spplot $(SAN_DIR)/test/pngpeak: SAN_EXTRA = $(CAIRO_CFLAGS) $(CAIRO_LIBS)

$(SAN_DIR)/bin/%: tools/%.c $(SAN_DIR)/libddtk.a $(SAN_CLI) $(HEADERS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) $(CLI_FLAGS) $< -o $@ $(SAN_CLI) $(SAN_DIR)/libddtk.a -lfftw3f -lfftw3f_omp $(CFITSIO_LIBS) -lm $(SAN_EXTRA)

$(SAN_DIR)/test/%: test/unit/%.c $(SAN_DIR)/libddtk.a $(SAN_CLI) $(HEADERS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) $(CLI_FLAGS) $< -o $@ $(SAN_CLI) $(SAN_DIR)/libddtk.a -lfftw3f -lfftw3f_omp $(CFITSIO_LIBS) -lm

$(SAN_DIR)/test/%: test/helpers/%.c $(SAN_DIR)/libddtk.a $(SAN_CLI) $(HEADERS)
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_CFLAGS) $(CLI_FLAGS) $< -o $@ $(SAN_CLI) $(SAN_DIR)/libddtk.a -lfftw3f -lfftw3f_omp $(CFITSIO_LIBS) -lm $(SAN_EXTRA)

$(SAN_DIR)/test/fault.so: test/fault/fault.c
	@mkdir -p $(dir $@)
	$(CC) -shared -fPIC -O2 -Wall -Wextra $< -o $@ -ldl

# ---- fuzzing ----------------------------------------------------------------------
# make fuzz: libFuzzer harnesses (clang, with ASan+UBSan) for the header,
# killfile, DM-list, plan, .inf and wisdom parsers, PSRFITS files, .cand files
# and rfifind masks (test/fuzz/), each run for
# FUZZ_SECONDS from its seed corpus (in FUZZ_JOBS processes); test/fuzz/run
# says how many inputs each parser got and fails on a crash.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 30
FUZZ_JOBS ?= 1
FUZZ_DIR := build/fuzz
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=all -std=gnu11 -Wall -Wextra -fopenmp -Iinclude $(SRC_INC)
# Every harness links the whole CPU library: the parsers reach the plan's
# algorithm registry (and through it every descriptor), and the wisdom
# harness runs the CPU kernel.
FUZZ_ALL_OBJ := $(SAN_LIB_C:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_TARGETS := header killfile dmlist plan inf wisdom psrfits cand mask
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

.PHONY: fuzz fuzz-build
.SECONDARY: $(FUZZ_ALL_OBJ)
fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@FUZZ_JOBS=$(FUZZ_JOBS) test/fuzz/run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

$(FUZZ_DIR)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_DIR)/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_ALL_OBJ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_ALL_OBJ) -o $@ \
		-lfftw3f -lfftw3f_omp $(CFITSIO_LIBS) -lm
