"""signlib: a sign/STE quantizer and leaky integrate-and-fire neurons (an example library for the conformance kit)."""

from .neurons import LIF, MultiStepLIF
from .quant import SignSTE

__all__ = ["LIF", "MultiStepLIF", "SignSTE"]
