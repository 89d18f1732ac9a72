"""RAHP / Michel scores on tiny BERT models, checked against finite differences, hand-built models
and straightforward per-head / per-example loops."""
import torch
import transformers

from forgetless.methods.rahp.model_scoring import (delta_c_scores, fisher_scores, margin_and_grad_norm, michel_importance,
                                            robustness_c)
from forgetless.methods.rahp.scores import head_sq_norms, margin
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates


def tiny(layers=2, heads=3, hidden=12, labels=3, seed=0, vocab=40):
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                  num_attention_heads=heads, intermediate_size=16, num_labels=labels,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                  max_position_embeddings=32, attn_implementation="eager")
    return transformers.BertForSequenceClassification(cfg).eval()


def batch_of(ids, lengths, labels):
    ids = torch.tensor(ids)
    mask = torch.zeros_like(ids)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
    return {"input_ids": ids * mask, "attention_mask": mask, "labels": torch.tensor(labels)}


def test_margin_and_c_against_finite_differences():
    model = tiny().double()
    batch = batch_of([[2, 7, 9, 3], [2, 11, 3, 0]], [4, 3], [1, 2])
    g, norm = margin_and_grad_norm(model, batch)
    embeds0 = model.get_input_embeddings()(batch["input_ids"]).detach()

    def g_of(embeds, rows):
        logits = model(inputs_embeds=embeds, attention_mask=batch["attention_mask"][rows]).logits
        return margin(logits, batch["labels"][rows])

    rows = torch.arange(2)
    assert torch.allclose(g.double(), g_of(embeds0, rows), atol=1e-6)
    # central differences, every coordinate of both examples in one batched forward
    n, per = embeds0.numel(), embeds0[0].numel()
    h = 1e-6
    owner = torch.arange(n) // per
    steps = torch.eye(n, dtype=torch.float64).reshape(n, *embeds0.shape)[torch.arange(n), owner] * h
    plus = g_of(embeds0[owner] + steps, owner)
    minus = g_of(embeds0[owner] - steps, owner)
    fd = ((plus - minus) / (2 * h)).reshape(embeds0.shape)
    fd_norm = fd.reshape(2, -1).norm(dim=1)
    assert torch.allclose(norm.double(), fd_norm, rtol=1e-5)
    c = robustness_c(model, [batch], eps=1e-8)
    assert torch.allclose(c.double(), g.double() / (fd_norm + 1e-8), rtol=1e-5)


def constructed_model(batch):
    """1 layer, 2 heads. Head 1 ignores its input (value weights 0, bias 1) and writes a large
    constant along u; class 0 reads u. The class-1 bias is then set halfway between class 0's
    logit with and without head 1, so head 1 alone decides between the classes."""
    model = tiny(layers=1, heads=2, hidden=16, labels=2)
    hd, d = 8, 16
    u = torch.randn(d)
    u = (u - u.mean()) / (u - u.mean()).norm()
    with torch.no_grad():
        layer = model.bert.encoder.layer[0]
        layer.attention.self.value.weight[hd:] = 0
        layer.attention.self.value.bias[hd:] = 1.0
        layer.attention.output.dense.weight[:, hd:] = 0
        layer.attention.output.dense.weight[:, hd] = 50 * u
        layer.output.dense.weight.zero_()
        layer.output.dense.bias.zero_()
        model.bert.pooler.dense.weight.copy_(torch.eye(d))
        model.bert.pooler.dense.bias.zero_()
        w = torch.tanh(u * d ** 0.5)
        model.classifier.weight.zero_()
        model.classifier.weight[0] = 12 * w / w.norm() ** 2
        model.classifier.bias.zero_()
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask")}
        with_head = model(**inputs).logits[:, 0]
        with Gates(model, ffn=False) as gates:
            gates.set_head_mask(("encoder", 0, "self"), [0])
            without = model(**inputs).logits[:, 0]
        assert with_head.min() > without.max()
        model.classifier.bias[1] = (with_head.min() + without.max()) / 2
    return model


def test_delta_c_sign_on_constructed_model():
    ids = torch.randint(5, 40, (6, 5), generator=torch.Generator().manual_seed(1)).tolist()
    model = constructed_model(batch_of(ids, [5, 5, 4, 5, 3, 5], [0] * 6))
    for label, sign in ((0, -1.0), (1, 1.0)):
        batch = batch_of(ids, [5, 5, 4, 5, 3, 5], [label] * 6)
        g, _ = margin_and_grad_norm(model, batch)
        with Gates(model, ffn=False) as gates:
            gates.set_head_mask(("encoder", 0, "self"), [0])
            g_masked, _ = margin_and_grad_norm(model, batch)
        # precondition of the construction: removing head 1 flips every prediction
        assert (sign * g < 0).all() and (sign * g_masked > 0).all()
        delta, _ = delta_c_scores(model, [batch])
        # removing the head that makes the true class win lowers C (ΔC < 0); removing the head
        # that makes it lose raises C (ΔC > 0)
        assert sign * delta[1] > 0


def test_delta_c_equals_masking_each_head_with_gates():
    model = tiny(layers=2, heads=3)
    batches = [batch_of([[2, 5, 6, 3], [2, 8, 3, 0], [2, 9, 10, 3]], [4, 3, 4], [0, 1, 2]),
               batch_of([[2, 4, 3], [2, 12, 3]], [3, 2], [2, 0])]
    base = robustness_c(model, batches)
    expected = []
    with Gates(model, ffn=False) as gates:
        for key, gate in gates.heads.items():
            for h in range(gate.numel()):
                gates.set_head_mask(key, [i for i in range(gate.numel()) if i != h])
                expected.append(float((robustness_c(model, batches) - base).mean()))
                gates.set_head_mask(key, list(range(gate.numel())))
    for rows in (4, 256):  # batches of 3 / 2 rows: 1 / 2 heads per pass; then all heads in one pass
        delta, baseline = delta_c_scores(model, batches, rows_per_pass=rows)
        assert torch.allclose(baseline, base)
        assert torch.allclose(delta, torch.tensor(expected), atol=1e-6, rtol=1e-4)
    assert all(p.requires_grad for p in model.parameters())  # weights unfrozen again


def test_fisher_equals_squared_gradient_of_head_slices():
    model = tiny(layers=2, heads=3)
    batch = batch_of([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0], [2, 9, 10, 3, 0]], [5, 3, 4], [0, 2, 1])
    fisher = fisher_scores(model, [batch])
    sites = get_adapter(model).attention_sites(model)
    ref = torch.zeros(6)
    for i in range(3):
        n = int(batch["attention_mask"][i].sum())
        model.zero_grad()
        logits = model(input_ids=batch["input_ids"][i:i + 1, :n]).logits
        torch.nn.functional.cross_entropy(logits, batch["labels"][i:i + 1]).backward()
        pos = 0
        for site in sites:
            for p, dim, role in site.head_parameters():  # q/k/v rows and biases, o columns
                ref[pos:pos + 3] += head_sq_norms(p.grad, dim, site.head_dim) / 3
            pos += 3
    assert torch.allclose(fisher, ref, rtol=1e-4, atol=1e-12)


def test_michel_importance_equals_per_example_gate_gradients():
    model = tiny(layers=2, heads=2, hidden=8)
    batch = batch_of([[2, 5, 6, 3], [2, 8, 3, 0], [2, 7, 3, 0]], [4, 3, 3], [0, 1, 2])
    importance = michel_importance(model, [batch])
    ref = torch.zeros(4)
    with Gates(model, ffn=False, requires_grad=True) as gates:
        for i in range(3):
            n = int(batch["attention_mask"][i].sum())
            logits = model(input_ids=batch["input_ids"][i:i + 1, :n]).logits
            loss = torch.nn.functional.cross_entropy(logits, batch["labels"][i:i + 1])
            grads = torch.autograd.grad(loss, list(gates.heads.values()))
            ref += torch.cat([g.abs() for g in grads]) / 3
    assert torch.allclose(importance, ref, rtol=1e-4, atol=1e-8)
