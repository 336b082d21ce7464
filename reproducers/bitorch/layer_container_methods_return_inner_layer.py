"""bitorch's QLinear and QConv2d return the layer they wrap from eval(), train(), requires_grad_(), to(), float(), ...

torch.nn.Module's chaining methods return the module itself, so `layer = QLinear(...).eval()` or
`model = model.to(device)` keep the object one built. bitorch 0.4's layers are LayerContainers that delegate those
methods to the implementation inside and return it (a _QLinearComposed / _QConv2dComposed), so code that keeps the
returned object silently drops the container.
"""
# expect: AssertionError: eval() returned _QLinearComposed, not the QLinear itself
from bitorch.layers import QConv2d, QLinear

linear = QLinear(8, 4, bias=True, input_quantization="sign", weight_quantization="sign")
conv = QConv2d(2, 3, 3, bias=False, input_quantization="sign", weight_quantization="sign")
for name, layer in (("QConv2d", conv), ("QLinear", linear)):
    for method in ("eval", "train", "double", "float", "cpu"):
        print(f"{name}.{method}() returned {type(getattr(layer, method)()).__name__}")
returned = linear.eval()
assert returned is linear, f"eval() returned {type(returned).__name__}, not the QLinear itself"
