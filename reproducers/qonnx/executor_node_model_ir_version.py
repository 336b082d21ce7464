"""qonnx's executor cannot run a standard ONNX node with onnx 1.23 and onnxruntime 1.31: it wraps each node in a
one-node model made at onnx's own IR version (14), which onnxruntime refuses.

execute_onnx runs QONNX's own operators (Quant, BipolarQuant, Trunc) in Python and every standard node through
onnxruntime, in a model built by qonnx_make_model (onnx.helper.make_model: ir_version = onnx.IR_VERSION). Here the
model itself is IR 10, as brevitas' export_qonnx writes it; the Relu node alone is what fails.
Correct: the node models take the graph's IR version (or one onnxruntime reads), and the Relu runs.
https://github.com/fastmachinelearning/qonnx/blob/main/src/qonnx/util/basic.py
"""
# expect: Unsupported model IR version
import numpy as np
import onnx
from onnx import TensorProto, helper
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx

graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
onnx.checker.check_model(model)
out = execute_onnx(ModelWrapper(model), {"x": np.array([[-1, 0, 2], [3, -4, 5]], dtype=np.float32)})
print(out["y"])
