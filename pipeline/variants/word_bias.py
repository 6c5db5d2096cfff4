"""Word-bias (ours): ``B_w = b_w``, one free learned value per vocabulary entry, the same in every
period (:class:`pipeline.models.word_bias.WordBias`). Reads no history, so it has no time-free
control; it is the control for "a contextual or temporal bias is per-word recalibration".
No settings of its own."""

from pipeline.variants._spec import VariantSpec

DISPLAY = "Word-bias"
ORDER = 22
VARIANT = VariantSpec(module="pipeline.models.word_bias:WordBias")
