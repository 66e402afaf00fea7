# Thin wrapper over scripts/ and CMake for the common targets.
.PHONY: setup build test unit quickstart bundle clean

setup:
	bash scripts/setup.sh

build:
	cmake --build build -j

test: setup
	bash scripts/test.sh

unit: build
	ctest --test-dir build --output-on-failure

quickstart: setup
	./build/cuda-agent judge --device cpu --task examples/relu_scale/model.py \
	    --candidate examples/relu_scale/candidates/cpu_correct

bundle: build
	bash scripts/bundle.sh

clean:
	rm -rf build dist
