"""The options of simulate() (codegen.runtime.options): an option of one kind of model given to another is refused
by name before anything runs; the options a kind takes get its defaults. No kernel: the fast tier."""
import pytest

from codegen.runtime.options import KIND_NAMES, KIND_OPTIONS, Run

GIVEN = {"alpha": -0.1, "newton_tol": 1e-8, "max_newton": 5, "baumgarte": 3.0, "projection": True,
         "switching": "acs", "joint_wrench": True, "frames": ["b1"]}


def test_every_kind_option_has_a_value_to_try():
    assert set(GIVEN) == set(KIND_OPTIONS)


@pytest.mark.parametrize("kind", sorted(KIND_NAMES))
@pytest.mark.parametrize("name", sorted(KIND_OPTIONS))
def test_an_option_of_another_kind_is_refused_by_name(kind, name):
    kinds, what, default = KIND_OPTIONS[name]
    run = Run(1.0, 0.01, **{name: GIVEN[name]})
    if kind in kinds:
        assert getattr(run.for_kind(kind, "alg"), name) == GIVEN[name]
    else:
        with pytest.raises(ValueError) as e:
            run.for_kind(kind, "alg")
        msg = str(e.value)
        assert msg.startswith(f"{name}: not an option of this model ({KIND_NAMES[kind]}, algorithm alg)"), msg
        assert what in msg


@pytest.mark.parametrize("kind", sorted(KIND_NAMES))
def test_defaults_where_taken_and_nothing_asked_elsewhere(kind):
    run = Run(1.0, 0.01, projection=False, joint_wrench=False).for_kind(kind, "alg")    # False asks for nothing
    for name, (kinds, _, default) in KIND_OPTIONS.items():
        value = getattr(run, name)
        if kind in kinds:
            assert value == default or value is default, (name, value)
        else:
            assert not value, (name, value)
    assert run.h == 0.01 and run.substeps == 1 and run.threads == 1
