"""The library's front door checks its keywords against the options' declarations (calibcli.core.declarations), the
ones the command line's flags are built from: the same choices, the same words."""

from __future__ import annotations

import pytest

from calibcli.core import declarations

from calibcli.audit import options as audit_options
from calibcli.compare import family as compare_family
from calibcli.core import family as families
from calibcli.diagram import family as diagram_family
from calibcli.ece_family import options as ece_options
from calibcli.recalibrate import family as recalibrate_family
from calibcli.smooth import options as smooth_options
from calibcli.tcal import options as tcal_options
from calibcli.core.errors import OptionError, library_text
from calibcli.metrics import binned_metric, ece, smooth_ece
from calibcli.core.validation import check_params

Y = [0, 1, 1, 0, 1, 1, 0, 1]
P = [0.2, 0.6, 0.9, 0.4, 0.7, 0.8, 0.1, 0.3]


def test_the_families_take_the_shared_declarations_themselves():
    # each declaration in the family modules that declare options with it (no module re-exports them)
    takers = {
        "MODE": (families, diagram_family, audit_options, recalibrate_family),
        "CLASS_WEIGHTS_PARAM": (ece_options, smooth_options, compare_family, recalibrate_family),
        "N_BINS": (ece_options, compare_family, diagram_family, recalibrate_family),
        "STRATEGY": (ece_options, compare_family, diagram_family, recalibrate_family),
        "ALPHA": (families, audit_options),
        "auto": (tcal_options,),
    }
    for name, modules in takers.items():
        for module in modules:
            assert getattr(module, name) is getattr(declarations, name)


@pytest.mark.parametrize("call, parameter, choices", [
    (lambda: ece(Y, P, strategy="equal"), "strategy", declarations.STRATEGY.choices),
    (lambda: ece(Y, P, mode="multi"), "mode", declarations.MODE.choices),
    (lambda: binned_metric("dce", Y, P, class_weights="freq"), "class_weights",
     declarations.CLASS_WEIGHTS_PARAM.choices),
    (lambda: smooth_ece(Y, P, mode="multi"), "mode", declarations.MODE.choices),
])
def test_library_refuses_a_choice_by_the_declaration(call, parameter, choices):
    with pytest.raises(OptionError) as info:
        call()
    assert info.value.parameter == parameter
    assert library_text(str(info.value)).endswith(f": expected one of {', '.join(choices)}")


def test_check_params_takes_the_choices_from_the_declaration_given():
    narrowed = declarations.MODE.narrowed(("binary", "top-label"))
    check_params({"mode": declarations.MODE}, mode="marginal")
    with pytest.raises(OptionError, match="expected one of binary, top-label$"):
        check_params({"mode": narrowed}, mode="marginal")
    with pytest.raises(OptionError):  # numbers by the rules of their names, as before
        check_params({}, n_bins=0)
