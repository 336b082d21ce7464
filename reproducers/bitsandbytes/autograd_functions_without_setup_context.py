"""torch.func.vmap (and jvp, per-sample gradients) through Linear4bit and Linear8bitLt raises: their
autograd.Functions (MatMul4Bit, MatMul8bitFp, MatMul8bitLt) define forward(ctx, ...) without setup_context.

torch.func transforms need the setup_context form of torch.autograd.Function. The correct behaviour: vmap over the
batch computes what a loop over the samples computes. https://pytorch.org/docs/main/notes/extending.func.html
"""
import torch
import bitsandbytes as bnb

torch.manual_seed(0)
linear = torch.nn.Linear(64, 3)
for layer in (bnb.nn.Linear4bit(64, 3, quant_type="nf4"), bnb.nn.Linear8bitLt(64, 3, has_fp16_weights=False)):
    layer.load_state_dict(linear.state_dict())
    layer = layer.to("cpu")
    x = torch.randn(2, 64, requires_grad=True)
    torch.func.vmap(lambda xi: layer(xi.unsqueeze(0)).squeeze(0))(x)  # raises RuntimeError
# expect: RuntimeError: In order to use an autograd.Function with functorch transforms
