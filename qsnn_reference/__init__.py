"""Pure-PyTorch specifications of quantized ops and spiking neurons.

Every public function here is the definition of what an implementation under test must compute,
forward *and* backward. Imports torch only.
"""
