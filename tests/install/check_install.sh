#!/bin/sh
# ctest install/prefix: `cmake --install BUILD --prefix P` into a scratch prefix, then everything
# a user runs from there works with no LD_LIBRARY_PATH and from another directory: P/bin/graphi,
# the Python package (P/lib/python3.X/site-packages on PYTHONPATH), and the C example built both
# by hand (cc ... -Wl,-rpath) and as a CMake project (find_package(graphi)).
# usage: check_install.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
set -eu
src=$1 build=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/elsewhere"
prefix=$scratch/prefix
unset LD_LIBRARY_PATH PYTHONPATH || true
/usr/bin/cmake --install "$build" --prefix "$prefix" > "$scratch/install.log"
cd "$scratch/elsewhere"

"$prefix/bin/graphi" --version
"$prefix/bin/graphi" run "$src/tests/data/onnx/mlp.onnx" --iterations 1 --warmup 0 > /dev/null

site=$(ls -d "$prefix"/lib/python3.*/site-packages)
PYTHONPATH=$site /usr/bin/python3 -c "
import numpy as np, graphi
assert graphi.__file__.startswith('$site'), graphi.__file__
s = graphi.Session('$src/tests/data/onnx/mlp.onnx')
print('python', graphi.__version__, s.run({'x': np.zeros((4, 16), np.float32)})['probs'].shape)"

cc -std=c99 -pedantic -Werror "$src/examples/c/run_model.c" -I"$prefix/include" -L"$prefix/lib" \
   -lgraphi -Wl,-rpath,"$prefix/lib" -o run_model_cc
./run_model_cc "$src/tests/data/onnx/mlp.onnx"

/usr/bin/cmake -S "$src/examples/c" -B build-example -DCMAKE_PREFIX_PATH="$prefix" > cmake.log
/usr/bin/cmake --build build-example > build.log
build-example/run_model "$src/tests/data/onnx/gru_dynamic_batch.onnx" batch=2
echo "install: ok"
