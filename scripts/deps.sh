# Sourced by build.sh and test.sh: makes sure the tools fusegen needs are present, installing
# what it can (libcjson-dev through apt-get when running as root), else stopping with one line.
fusegen_need() {
  command -v cmake >/dev/null 2>&1 || { echo "fusegen: cmake (>= 3.24) is missing: install it (apt-get install cmake)" >&2; exit 1; }
  command -v cc >/dev/null 2>&1 || { echo "fusegen: a C compiler is missing: install it (apt-get install build-essential)" >&2; exit 1; }
  if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  command -v nvcc >/dev/null 2>&1 || echo "fusegen: note: nvcc not found, building the generator only (install the CUDA toolkit for the kernel library)" >&2
  if [ ! -f /usr/include/cjson/cJSON.h ] && [ -z "${CMAKE_PREFIX_PATH:-}" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "fusegen: installing libcjson-dev" >&2
      { [ -n "$(find /var/lib/apt/lists -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq; } &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libcjson-dev >/dev/null ||
        { echo "fusegen: 'apt-get install libcjson-dev' failed: install cJSON and run again" >&2; exit 1; }
    else
      echo "fusegen: cJSON is missing: run 'sudo apt-get install libcjson-dev' (or set CMAKE_PREFIX_PATH to a cJSON install)" >&2
      exit 1
    fi
  fi
}
