"""Frequency-NoLSTM (paper 001 §4.3): ``B_iw = a · log f_{i-1,w} + b``, the previous period's log
frequency alone (:class:`pipeline.models.temporal.FrequencyNoLSTMBias`). No settings of its own."""

from pipeline.variants._spec import VariantSpec

DISPLAY = "Frequency-NoLSTM"
ORDER = 10
VARIANT = VariantSpec(module="pipeline.models.temporal:FrequencyNoLSTMBias",
                      reads=frozenset({"frequencies"}))
