# Metadata lives in pyproject.toml. This file builds the one compiled part of the package: the run-time engine
# (codegen/compiler/engine.pyx), compiled once per installation and shared by every generated model module.
import importlib.util
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("engine_source", os.path.join(HERE, "codegen", "compiler",
                                                                             "engine_source.py"))
engine_source = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(engine_source)


def engine_extension():
    import numpy
    from Cython.Build import cythonize
    ext = Extension(engine_source.MODULE, ["codegen/compiler/engine.pyx"], include_dirs=[numpy.get_include()],
                    define_macros=[("MB_ENGINE_SOURCE", f'"{engine_source.source_hash()}"')],
                    extra_compile_args=["-O3", "-g0", "-fno-math-errno"])
    return cythonize([ext], quiet=True, language_level=3,
                     compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True})


setup(ext_modules=engine_extension())
