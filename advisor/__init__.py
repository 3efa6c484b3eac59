"""pd-advisor: chunked prefill on a colocated pool, or prefill/decode disaggregation?"""

__version__ = "0.1.0"
