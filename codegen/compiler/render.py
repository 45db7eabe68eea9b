"""Render a model's kernel from its family's template: jinja2 holds structure, the family's plan the maths.

User strings (model, body, joint, force names) reach the source only through the ``comment`` filter.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._version import __version__
from ..algorithms import Family
from ..algorithms.codes import TEMPLATE_ENUMS
from .c_emit import c_joint_map, c_kernel, comment

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def template_dir() -> Path:
    """Templates: the source checkout's templates/ or the installed codegen/templates package data."""
    installed = PACKAGE_DIR / "templates"
    if installed.is_dir() and any(installed.glob("*/*.j2")):
        return installed
    return PACKAGE_DIR.parent / "templates"


def template_env() -> jinja2.Environment:
    """The one jinja2 environment of all kernels. User strings reach the source only through |comment."""
    import jinja2                  # here, not at import: a cached build never renders (start-up time)

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir())), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=False, lstrip_blocks=False)
    env.filters["comment"] = comment
    env.filters["c_kernel"] = c_kernel              # a sympy kernel as a C99 function (templates/shared/kernels.j2)
    env.filters["c_joint_map"] = c_joint_map
    return env


def names_key(model) -> str:
    """Digest of every user string that reaches generated source.

    Digest of every user string that reaches generated source (as escaped comments): part of the build key,
    so a cached module always matches what its model would render."""
    names = [model.name] + [j.name for j in model.joints] + [b.name for b in model.bodies] + \
        [f.name for f in (*getattr(model, "springs", ()), *getattr(model, "point_springs", ()),
                          *getattr(model, "joint_forces", ()))]
    return hashlib.sha256(json.dumps(names).encode()).hexdigest()


def render(fam: Family, plan, options: dict, key: str, derivatives: bool = False, lanes: bool = False) -> str:
    """The Cython source of one model for one family.

    The Cython source of one model for one family (header: version, build hash, roadmap); derivatives: with
    the derivative kernels of rigid trees; lanes: calling the lanes of ``cache.module_sources``."""
    tpl = template_env().get_template(fam.template)
    return tpl.render(version=__version__, build_hash=key, model_name=plan.model.name, algorithm=fam.name,
                      derivatives=derivatives, lanes=lanes, enums=TEMPLATE_ENUMS,
                      options=", ".join(f"{k}={v}" for k, v in options.items()) or "-", options_repr=repr(options),
                      **options, **fam.template_vars(plan, options))
