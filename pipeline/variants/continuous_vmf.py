"""Continuous output (paper 004), trained on the vMF loss (NLLvMF_reg1) of Kumar & Tsvetkov: the LM's final state is
mapped to a point ``ê = W h + b`` and decoded by its nearest target vector; the targets are the
input embeddings of the trained Baseline of the same seed
(:class:`pipeline.models.heads.VMFOutput`). Its softmax is the vMF densities renormalised over
the vocabulary, so its PPL is not a softmax LM's (``distribution: vmf``). Time-free."""

from pipeline.variants._spec import VariantSpec

DISPLAY = "Continuous-vMF"
ORDER = 80
VARIANT = VariantSpec(module="pipeline.models.heads:VMFOutput", own_objective=True,
                      targets_from_baseline=True, distribution="vmf")
