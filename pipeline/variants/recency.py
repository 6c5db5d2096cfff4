"""Recency-shift (ours): ``B_iw = λ · (1/m Σ_{j=1..m} log f_{i-j,w} − log f̄_w)``, the window's mean
log frequency of each word against its pooled log frequency ``log f̄_w`` in the training periods
(the level a shared base LM already holds), one learned scalar ``λ`` starting at 0
(:class:`pipeline.models.relative.RecencyBias`). Nothing else is learned; no settings.

Its derived time-free control ``recency-static`` pools the window over the training periods
too, so its shift is 0 for every word: it is the base LM (its ``λ`` gets no gradient)."""

from pipeline.variants._spec import VariantSpec

DISPLAY = "Recency-shift"
ORDER = 24
VARIANT = VariantSpec(module="pipeline.models.relative:RecencyBias",
                      reads=frozenset({"frequencies"}), relative=True)
