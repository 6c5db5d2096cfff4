"""Numerics probe: do a tiny GPT-2's trained weights depend on the CPU's kernels?

    FUTURELM_NO_PIN=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=COMPATIBLE python -m benchmarks.numerics_probe [--threads N]
        [--det] [--model hf|project] [--probes] [--gen] [--time K] [--pyln]

Trains 20 AdamW steps of the default-shape GPT-2 from a fixed seed and prints one JSON line with
sha256 prefixes of the weights and of eval logits. The levers (ATEN_CPU_CAPABILITY, MKL_CBWR,
ONEDNN_MAX_CPU_ISA, ...) are read from the environment, which must be set before torch is
imported: run the same command under two settings and compare the hashes. FUTURELM_NO_PIN=1 is
needed since the pipeline pins the kernels itself (benchmarks/__init__.py, pipeline/infra/numerics.py);
without it every run gets the pinned setting, whatever the command line's environment says. Findings and the
hashes to expect: benchmarks/results/numerics.md.
"""
import argparse, hashlib, json, os, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--det", action="store_true")
ap.add_argument("--model", default="hf")
ap.add_argument("--probes", action="store_true")
ap.add_argument("--gen", action="store_true")
ap.add_argument("--time", type=int, default=0, help="repeat training K times and report median seconds")
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--save", default="")
ap.add_argument("--pyln", action="store_true", help="replace nn.LayerNorm by composed ops (tests whether LN backward is the thread-dependent op)")
ap.add_argument("--load", default="", help="skip training: load weights saved with --save (isolates scoring/generation)")
args = ap.parse_args()

import torch
import torch.nn.functional as F
torch.set_num_threads(args.threads)
if args.det:
    torch.use_deterministic_algorithms(True)
from transformers import GPT2Config, GPT2LMHeadModel

def h(*ts):
    m = hashlib.sha256()
    for t in ts:
        m.update(t.detach().contiguous().cpu().numpy().tobytes())
    return m.hexdigest()[:12]

V, L, B = 4096, 128, 4

def build():
    torch.manual_seed(1234)
    cfg = GPT2Config(vocab_size=V, n_positions=256, n_embd=128, n_layer=2, n_head=4,
                     resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1, bos_token_id=0, eos_token_id=0,
                     pad_token_id=0, attn_implementation="sdpa")
    lm = GPT2LMHeadModel(cfg)
    if args.pyln:
        class PyLN(torch.nn.Module):
            def __init__(self, ln):
                super().__init__(); self.weight, self.bias, self.eps = ln.weight, ln.bias, ln.eps
            def forward(self, x):
                mu = x.mean(-1, keepdim=True); var = (x - mu).pow(2).mean(-1, keepdim=True)
                return (x - mu) * torch.rsqrt(var + self.eps) * self.weight + self.bias
        for name, mod in list(lm.named_modules()):
            for cn, child in list(mod.named_children()):
                if isinstance(child, torch.nn.LayerNorm):
                    setattr(mod, cn, PyLN(child))
    if args.model == "project":
        sys.path.insert(0, "/work/main")
        from pipeline.models.future_lm import make_future_lm
        return lm, make_future_lm(lm, "baseline", window=3)
    return lm, None

def batch(gen, lengths):
    ids = torch.randint(1, V, (B, L), generator=gen)
    mask = torch.zeros(B, L, dtype=torch.long)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    ids = ids.masked_fill(mask == 0, 0)
    labels = ids.masked_fill(mask == 0, -100)
    return ids, mask, labels

def train():
    lm, wrapper = build()
    gen = torch.Generator().manual_seed(42)
    opt = torch.optim.AdamW((wrapper if wrapper is not None else lm).parameters(), lr=2e-3)
    net = wrapper if wrapper is not None else lm
    net.train()
    losses = []
    for step in range(args.steps):
        ids, mask, labels = batch(gen, [128, 101, 77, 50])
        out = net(input_ids=ids, attention_mask=mask, labels=labels)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        losses.append(out.loss.item())
    return lm, losses

def evaluate(lm):
    lm.eval()
    gen = torch.Generator().manual_seed(7)
    ids, mask, labels = batch(gen, [128, 90, 128, 33])
    with torch.no_grad():
        logits = lm(input_ids=ids, attention_mask=mask).logits
        lp = torch.log_softmax(logits[:, :-1].float(), -1)
        tgt = labels[:, 1:]
        tok = lp.gather(-1, tgt.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        valid = tgt != -100
        nll = -(tok * valid).sum() / valid.sum()
    return logits, tok, nll

res = {"cap": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(), "det": args.det,
       "env": {k: os.environ.get(k) for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA",
                                              "MKL_ENABLE_INSTRUCTIONS", "MKL_NUM_THREADS", "OMP_NUM_THREADS") if os.environ.get(k)}}
if args.time:
    ts = []
    for _ in range(args.time):
        t0 = time.perf_counter(); train(); ts.append(time.perf_counter() - t0)
    res["train_s"] = sorted(ts)[len(ts) // 2]
if args.load:
    lm, _ = build(); lm.load_state_dict(torch.load(args.load)); losses = [float("nan")]
else:
    lm, losses = train()
if args.save:
    torch.save(lm.state_dict(), args.save)
sd = lm.state_dict()
res["w"] = h(*sd.values())
logits, tok, nll = evaluate(lm)
res["logits"] = h(logits); res["tok_lp"] = h(tok); res["nll"] = repr(nll.item()); res["loss_last"] = repr(losses[-1])

if args.gen:
    torch.manual_seed(99)
    prompt = torch.randint(1, V, (2, 8), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        out = lm.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True, num_beams=5, top_k=50,
                          top_p=0.92, max_new_tokens=24, pad_token_id=0)
        torch.manual_seed(99)
        out2 = lm.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=True, top_k=50, top_p=0.92,
                           max_new_tokens=24, pad_token_id=0)
        torch.manual_seed(99)
        ms = torch.multinomial(torch.softmax(lm(prompt).logits[:, -1], -1), 20, replacement=True)
    res["gen_beam"] = h(out); res["gen_sample"] = h(out2); res["multinomial"] = h(ms)
    res["gen_beam_tok"] = out[0, -8:].tolist()

if args.probes:
    # per-op probes on fixed random inputs: which kernels depend on capability / threads
    g = torch.Generator().manual_seed(3)
    x = torch.randn(512, 128, generator=g, requires_grad=True)
    w = torch.randn(128, 384, generator=g, requires_grad=True)
    b = torch.randn(384, generator=g, requires_grad=True)
    big = torch.randn(512, 4096, generator=g)
    P = {}
    y = torch.addmm(b, x, w); gy = torch.randn_like(y, generator=g) if False else torch.randn(y.shape, generator=g)
    gx, gw, gb = torch.autograd.grad(y, (x, w, b), gy)
    P["addmm_fwd"] = h(y); P["addmm_dx"] = h(gx); P["addmm_dW"] = h(gw); P["addmm_db(sum)"] = h(gb)
    lw = torch.randn(128, generator=g, requires_grad=True); lb = torch.randn(128, generator=g, requires_grad=True)
    y = F.layer_norm(x, (128,), lw, lb); P["layernorm_fwd"] = h(y)
    P["layernorm_bwd"] = h(*torch.autograd.grad(y, (x, lw, lb), torch.randn(y.shape, generator=g)))
    xs = big.clone().requires_grad_(); y = torch.softmax(xs, -1); P["softmax_fwd"] = h(y)
    P["softmax_bwd"] = h(*torch.autograd.grad(y, xs, torch.randn(y.shape, generator=g)))
    P["log_softmax"] = h(torch.log_softmax(big, -1))
    y = F.gelu(xs, approximate="tanh"); P["gelu_tanh_fwd"] = h(y)
    P["gelu_tanh_bwd"] = h(*torch.autograd.grad(y, xs, torch.randn(y.shape, generator=g)))
    P["exp"] = h(big.exp()); P["tanh"] = h(big.tanh())
    P["sum_all"] = h(big.sum()); P["sum_dim0"] = h(big.sum(0)); P["norm"] = h(torch.linalg.vector_norm(big))
    tgt = torch.randint(0, 4096, (512,), generator=g); tgt[::7] = -100
    xs2 = big.clone().requires_grad_(); ce = F.cross_entropy(xs2, tgt, ignore_index=-100); P["ce_fwd"] = h(ce)
    P["ce_bwd"] = h(*torch.autograd.grad(ce, xs2))
    E = torch.randn(4096, 128, generator=g, requires_grad=True); idx = torch.randint(0, 4096, (512,), generator=g)
    idx[:100] = 5
    y = F.embedding(idx, E); P["embedding_bwd"] = h(*torch.autograd.grad(y, E, torch.randn(y.shape, generator=g)))
    q, k, v = (torch.randn(4, 4, 128, 32, generator=g, requires_grad=True) for _ in range(3))
    am = torch.ones(4, 1, 128, 128, dtype=torch.bool).tril(); am[1, :, :, 100:] = False
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=am); P["sdpa_fwd"] = h(y)
    P["sdpa_bwd"] = h(*torch.autograd.grad(y, (q, k, v), torch.randn(y.shape, generator=g)))
    y = torch.matmul(x, w); P["matmul"] = h(y)
    lin = F.linear(x, w.t().contiguous()); P["linear"] = h(lin)
    ps = [torch.randn(4096, 128, generator=g) for _ in range(3)]; gs = [torch.randn(4096, 128, generator=g) for _ in range(3)]
    for p_, g_ in zip(ps, gs): p_.grad = g_
    ps = [p_.requires_grad_() for p_ in ps]
    for p_, g_ in zip(ps, gs): p_.grad = g_
    o = torch.optim.AdamW(ps, lr=2e-3); o.step(); o.step(); P["adamw_foreach"] = h(*ps)
    P["clip_total_norm"] = h(torch.nn.utils.clip_grad_norm_(ps, 1.0))
    res["probes"] = P
print(json.dumps(res))
