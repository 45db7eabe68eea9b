"""The symbolic layer: sympy models of joints, spatial algebra and elements, printed as Cython kernels."""
