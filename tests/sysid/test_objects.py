"""The unknowns of a fit over several objects: shared and per-object parameters map to each trial."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real.errors import Sim2RealError
from sim2real.sysid.files.fit_file import FitDocument
from sim2real.sysid.problem.objects import ObjectLayout, Unknown, parse_per_object

GROUPS = (("contact.mu_table",), ("contact.mu_pusher",), ("box.com_x", "box.com_y"))
TRIALS = [("steel_1", "steel"), ("alu_1", "alu"), ("steel_2", "steel"), ("pp_1", "plastic")]


def test_per_object_unknowns_are_labelled_and_ordered() -> None:
    layout = ObjectLayout.build(GROUPS, parse_per_object("contact.mu_table", GROUPS), TRIALS)
    assert layout.labels == ("contact.mu_table[alu]", "contact.mu_table[plastic]", "contact.mu_table[steel]",
                             "contact.mu_pusher", "box.com_x")
    assert [u.name for u in layout.unknown_list[:3]] == ["contact.mu_table"] * 3
    assert layout.unknown_list[2] == Unknown(("contact.mu_table",), "steel")
    assert layout.unknown_list[4] == Unknown(("box.com_x", "box.com_y"), None)
    assert layout.unknown_list[4].reported == ("box.com_x", "box.com_y")


def test_fit_json_keeps_each_unknowns_names_and_object_and_older_files_are_read_from_their_labels() -> None:
    layout = ObjectLayout.build(GROUPS, parse_per_object("contact.mu_table", GROUPS), TRIALS)
    labels = list(layout.labels)
    values = {key: 0.1 for u in layout.unknown_list for key in u.reported}
    correlation = {"names": labels, "matrix": np.eye(len(labels)).tolist()}
    written = FitDocument.from_json({"values": values, "correlation": correlation,
                                     "unknowns": [u.as_dict() for u in layout.unknown_list]}, "fit")
    assert written.unknowns == layout.unknown_list
    assert FitDocument.from_json(written.to_json(), "fit").unknowns == layout.unknown_list
    older = FitDocument.from_json({"values": values, "correlation": correlation,
                                   "tied": [["box.com_x", "box.com_y"]]}, "old fit")
    assert older.unknowns == layout.unknown_list
    with pytest.raises(Sim2RealError, match=r"'unknowns' .* do not match the correlation's names"):
        FitDocument.from_json({"values": values, "correlation": correlation,
                               "unknowns": [u.as_dict() for u in layout.unknown_list[::-1]]}, "fit")


def test_each_trial_takes_its_own_objects_value_and_columns() -> None:
    layout = ObjectLayout.build(GROUPS, {"contact.mu_table"}, TRIALS)
    x = np.array([0.1, 0.2, 0.3, 0.5, 0.01])
    assert layout.expand(x, "steel") == {"contact.mu_table": 0.3, "contact.mu_pusher": 0.5, "box.com_x": 0.01,
                                         "box.com_y": 0.01}
    jac = np.array([[1.0, 2.0, 3.0, 4.0]])  # columns: mu_table, mu_pusher, com_x, com_y
    np.testing.assert_array_equal(layout.reduce_columns(jac, "alu"), [[1.0, 0.0, 0.0, 2.0, 7.0]])
    np.testing.assert_array_equal(layout.reduce_columns(jac, "steel"), [[0.0, 0.0, 1.0, 2.0, 7.0]])
    assert layout.name_groups == (0, 1, 2, 2)  # a trial's columns when ties are differentiated together
    np.testing.assert_array_equal(layout.place_groups(np.array([[1.0, 2.0, 7.0]]), "alu"), [[1.0, 0.0, 0.0, 2.0, 7.0]])


def test_without_per_object_names_the_layout_is_the_shared_fit() -> None:
    layout = ObjectLayout.build(GROUPS, frozenset(), [("a", None), ("b", "steel")])
    assert layout.labels == ("contact.mu_table", "contact.mu_pusher", "box.com_x")
    assert layout.expand(np.array([0.4, 0.3, 0.0])) == layout.expand(np.array([0.4, 0.3, 0.0]), "steel")


@pytest.mark.parametrize(("per_object", "trials", "expected"), [
    ("contact.kappa_grad", TRIALS, "not free"),
    ("box.com_x", TRIALS, "must all be per object or all shared"),
    ("contact.mu_table", [("steel_1", "steel"), ("mystery", None)], "mystery carries none"),
])
def test_bad_per_object_requests_are_one_line_errors(per_object: str, trials: list, expected: str) -> None:
    with pytest.raises(Sim2RealError, match=expected):
        ObjectLayout.build(GROUPS, parse_per_object(per_object, GROUPS), trials)


@settings(max_examples=60, deadline=None)
@given(per=st.lists(st.sampled_from(["contact.mu_table", "contact.mu_pusher"]), unique=True),
       obj=st.sampled_from(["steel", "alu", "plastic"]),
       seed=st.integers(0, 2**31 - 1))
def test_reduced_columns_are_the_chain_rule_of_expand(per: list[str], obj: str, seed: int) -> None:
    """For r(values) linear in the registry values, dr/dx = reduce(dr/dvalues) for every trial's object."""
    layout = ObjectLayout.build(GROUPS, frozenset(per), TRIALS)
    rng = np.random.default_rng(seed)
    jac = rng.standard_normal((3, len(layout.names)))
    x = rng.standard_normal(len(layout.labels))

    def residual(x_: np.ndarray) -> np.ndarray:
        values = layout.expand(x_, obj)
        return jac @ np.array([values[n] for n in layout.names])

    step = np.eye(len(x))
    numeric = np.stack([residual(x + step[i]) - residual(x) for i in range(len(x))], axis=1)
    np.testing.assert_allclose(layout.reduce_columns(jac, obj), numeric, atol=1e-12)
