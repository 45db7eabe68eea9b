"""mbgen: symbolic-to-Cython code generation for O(n) multibody dynamics."""
__version__ = "0.1.0"
