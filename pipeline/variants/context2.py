"""Context² (paper 001 eq. 9-10), doubly contextualized:
``B_ikw = α σ(H_kᵀ C B̃_iw)(E_wᵀ D B̃_iw)``, ``B̃_iw = (E_wᵀ U_iw) A``, ``U_iw`` an LSTM over the
word's pooled contextual embeddings (:class:`pipeline.models.temporal.Context2Bias`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.variants._spec import VariantSpec, setting
from pipeline.variants import ContextInput, check_settings, context_input, lstm_hidden


@dataclass(frozen=True)
class Context2Settings:
    """params ``variants.context2.*``."""

    lstm_hidden: int = lstm_hidden()
    context_input: ContextInput = context_input()
    alpha: float | None = setting(None, "eq. 10's alpha: 'learned' (a parameter initialised at "
                                        "1) or a fixed number (paper searched 1 .. 1e-5)",
                                  none="learned")

    def __post_init__(self) -> None:
        check_settings(self, "lstm_hidden")


DISPLAY = "Context²"
ORDER = 40
VARIANT = VariantSpec(module="pipeline.models.temporal:Context2Bias", settings=Context2Settings,
                      reads=frozenset({"embeddings"}))
