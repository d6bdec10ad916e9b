#!/usr/bin/env bash
# libftl as a user gets it: `cmake --install` into a fresh prefix, then
#  - libftl.so exports the public API (include/ftl, marked FTL_API) and nothing else, and libftl.a defines
#    no other global symbol;
#  - each public header compiles on its own, in C and C++;
#  - a C++ program compiles against the installed headers and links the shared library;
#  - a C program builds through pkg-config, shared and --static; one written against the names before
#    0.4.5 builds too, told the new names, and runs;
#  - a CMake project finds it with find_package(ftl) (ftl::ftl and ftl::ftl_static).
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls -d "$prefix"/lib*/ | head -n 1)
lib=${lib%/}

# Every exported symbol is declared FTL_API in an installed header, and every such declaration is exported.
exported=$(nm -D --defined-only "$lib/libftl.so" | awk '{print $3}' | sort)
declared=$(grep -hoE '^(extern )?FTL_API [^(;]*[ *]ftl_[a-z0-9_]+' "$prefix"/include/ftl/*.h \
	| grep -oE 'ftl_[a-z0-9_]+$' | sort)
if [ "$exported" != "$declared" ]; then
	echo "FAIL: libftl.so exports differ from the FTL_API declarations:"
	diff <(echo "$declared") <(echo "$exported") || true
	exit 1
fi
echo "ok: libftl.so exports exactly the $(echo "$declared" | wc -l) FTL_API symbols"
# The archive too: its global definitions are the same public names (internal ones are local to it).
archived=$(nm -g --defined-only "$lib/libftl.a" | awk 'NF == 3 {print $3}' | sort -u)
if [ "$archived" != "$exported" ]; then
	echo "FAIL: libftl.a defines global symbols that libftl.so does not export:"
	diff <(echo "$exported") <(echo "$archived") || true
	exit 1
fi
echo "ok: libftl.a defines no other global symbol"
soname=$(objdump -p "$lib/libftl.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libftl.so.0" ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }

# Each installed header stands alone (one object each; ftl.h only includes them), in C and in C++.
for h in "$prefix"/include/ftl/*.h; do
	name=ftl/$(basename "$h")
	echo "#include \"$name\"" | cc -std=c11 -Wall -Wextra -Werror -I"$prefix/include" -fsyntax-only -x c - \
		|| { echo "FAIL: $name does not compile alone (C)"; exit 1; }
	echo "#include \"$name\"" | g++ -std=c++17 -Wall -Wextra -Werror -I"$prefix/include" -fsyntax-only -x c++ - \
		|| { echo "FAIL: $name does not compile alone (C++)"; exit 1; }
done
echo "ok: each of the $(ls "$prefix"/include/ftl/*.h | wc -l) headers compiles alone, in C and C++"

out=$(mktemp -d -p "$prefix")
export LD_LIBRARY_PATH="$lib" PKG_CONFIG_PATH="$lib/pkgconfig"
g++ -std=c++17 -Wall -Wextra -Werror -I"$prefix/include" "$src/tests/install/consumer.cpp" -L"$lib" -lftl \
	-o "$out/consumer_cpp"
"$out/consumer_cpp"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/consumer.c" $(pkg-config --cflags --libs ftl) -o "$out/c_shared"
"$out/c_shared"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$src/tests/install/consumer.c" $(pkg-config --cflags ftl) "$lib/libftl.a" \
	$(pkg-config --static --libs ftl | sed 's/-lftl\b//') -o "$out/c_static"
if ldd "$out/c_static" | grep -q libftl; then echo "FAIL: the static build loads libftl.so"; exit 1; fi
"$out/c_static"
# The names before 0.4.5: deprecated (the compiler says which call to use), still exported and answering.
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -Wno-error=deprecated-declarations "$src/tests/install/older_names.c" \
	$(pkg-config --cflags --libs ftl) -o "$out/older_names" 2>"$out/older_names.log"
grep -q "use ftl_comm_delete" "$out/older_names.log" || { echo "FAIL: ftl_comm_destroy is not marked deprecated"; exit 1; }
"$out/older_names"

mkdir "$out/cmake"
cp "$src/tests/install/CMakeLists.consumer.txt" "$out/cmake/CMakeLists.txt"
cp "$src/tests/install/consumer.c" "$out/cmake/"
wanted=$(sed -nE 's/^#define FTL_VERSION_STRING "([0-9]+\.[0-9]+)\.[0-9]+"/\1/p' "$prefix/include/ftl/version.h")
cmake -S "$out/cmake" -B "$out/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" -DFTL_WANTED="$wanted" >/dev/null
cmake --build "$out/cmake/build" >/dev/null
"$out/cmake/build/consumer_shared"
"$out/cmake/build/consumer_static"
echo "ok: C++, pkg-config (shared, static) and find_package(ftl) consumers built and ran"
