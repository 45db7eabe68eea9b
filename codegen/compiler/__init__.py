"""Compiler layer (the build step): render a family's template for a model, compile with Cython, cache by content hash."""
from ..algorithms import BuildError
from .cache import build_key, build_module, cached_module, default_cache_dir, generated_source, resolve_options
from .render import comment, names_key, render, template_dir, template_env

__all__ = ["BuildError", "build_key", "build_module", "cached_module", "comment", "default_cache_dir",
           "generated_source", "names_key", "render", "resolve_options", "template_dir", "template_env"]
