"""Details of robot files met on the way (issue: real robot files): an XML declaration of version 0.0, unused
spatial tendons, massless bodies under cfa, default result names of robot files, full names in `mbgen check`."""
import argparse

import pytest

import codegen
from codegen.algorithms import BuildError
from codegen.cli import main
from codegen.cli.simulate import default_out

LINK = ('<link name="{0}"><inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
        'izz="0.01"/></inertial></link>')


def urdf(name="plane", version="1.0", link="a_link_with_a_rather_long_name"):
    return (f'<?xml version="{version}"?>\n<robot name="{name}"><link name="base"/>{LINK.format(link)}'
            f'<joint name="a_joint_with_a_long_name" type="continuous"><parent link="base"/><child link="{link}"/>'
            '</joint></robot>')


def test_xml_version_0_loads_and_names_print_in_full(tmp_path, capsys):
    p = tmp_path / "old.urdf"
    p.write_text(urdf(version="0.0"))
    assert main(["check", str(p)]) == 0
    out = capsys.readouterr().out
    assert "a_link_with_a_rather_long_name" in out and "a_joint_with_a_long_name" in out


def test_default_result_name_is_the_robot_files_stem(tmp_path):
    """Two laikago URDFs are both <robot name="plane">: their results must not overwrite each other."""
    args = argparse.Namespace(algorithm="recursive", ref_point=None, form=None, switching=None)
    outs = set()
    for stem in ("laikago", "laikago_toes_zup"):
        p = tmp_path / f"{stem}.urdf"
        p.write_text(urdf())
        m = codegen.load_model(p)
        assert m.name == "plane"
        outs.add(default_out(args, m, "rk4", {"integrator": "default"}, "rk4"))
    assert outs == {"results/laikago.npz", "results/laikago_toes_zup.npz"}


MJCF = ('<mujoco><worldbody><body name="a"><joint name="h" type="hinge"/><geom size="0.1" contype="0" '
        'conaffinity="0"/><site name="s1"/><body name="b" pos="0.2 0 0"><joint name="h2" type="hinge"/><geom '
        'size="0.1" contype="0" conaffinity="0"/><site name="s2" pos="0.1 0 0"/></body></body></worldbody><tendon>'
        '<spatial name="t" {0}><site site="s1"/><site site="s2"/></spatial></tendon>{1}</mujoco>')


def test_a_spatial_tendon_that_changes_nothing_does_not_block(tmp_path, capsys):
    """Fixed tendons are imported (tests/model/test_mjcf_actuators.py); a spatial one is refused by name unless it
    changes nothing (no stiffness, damping, limit or actuator: gymnasium's humanoid has two such tendons)."""
    p = tmp_path / "t.xml"
    p.write_text(MJCF.format("", ""))
    m = codegen.load_model(p)
    assert [j.name for j in m.joints] == ["h", "h2"] and m.tendons == []
    for tendon, actuator in (('stiffness="3"', ""), ("", '<actuator><motor tendon="t"/></actuator>')):
        p.write_text(MJCF.format(tendon, actuator))
        assert main(["check", str(p)]) == 2
        err = capsys.readouterr().err
        assert "1 spatial tendons ('t'" in err and "not modelled" in err, err
    p.write_text(MJCF.format("", '<actuator><motor tendon="t"/></actuator>'))
    with pytest.warns(codegen.model.robotfiles.ModelWarning, match="left out on request"):
        assert codegen.load_model(p, ignore_actuators=True).actuators == []


def test_cfa_refuses_a_massless_body_by_name(tmp_path):
    p = tmp_path / "two.xml"                     # two joints in one body: a massless helper body between them
    p.write_text('<mujoco><worldbody><body name="a"><joint name="h1" type="hinge" axis="0 0 1"/><joint name="h2" '
                 'type="hinge" axis="0 1 0"/><geom size="0.1" contype="0" conaffinity="0"/></body></worldbody>'
                 '</mujoco>')
    m = codegen.load_model(p)
    with pytest.raises(BuildError, match="body 'a.h1' is massless: use recursive, dense or mstmm"):
        codegen.build(m, "cfa")


def test_impossible_inertia_loads_from_robot_files_with_a_warning(tmp_path, capsys):
    """romeo_small's shoulder (6.6e-4 + 6.8e-4 < 6.6e-3) loads as pinocchio loads it, with a warning naming the body;
    the project's own files refuse it unless allow_nonphysical_inertia: true."""
    bad = ('<link name="odd"><inertial><mass value="1"/><inertia ixx="0.00066" ixy="0" ixz="0" iyy="0.00068" iyz="0" '
           'izz="0.0066"/></inertial></link>')
    p = tmp_path / "odd.urdf"
    p.write_text(urdf().replace(LINK.format("a_link_with_a_rather_long_name"), bad).replace(
        "a_link_with_a_rather_long_name", "odd"))
    with pytest.warns(codegen.model.robotfiles.ModelWarning, match="inertias of odd violate the triangle"):
        m = codegen.load_model(p)
    d = m.to_dict()
    assert d["allow_nonphysical_inertia"] is True
    codegen.model_from_dict(d)                                     # round trip: still allowed (with the warning)
    del d["allow_nonphysical_inertia"]
    f = tmp_path / "odd.yaml"
    import yaml
    f.write_text(yaml.safe_dump(d))
    assert main(["check", str(f)]) == 2
    assert "violate the triangle inequality" in capsys.readouterr().err
