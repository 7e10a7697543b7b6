"""Loaded by the runner's processes in one training test (this folder first on PYTHONPATH): records, in
RFT_TEST_ORDER_LOG, when TrainingArguments finish initialising and when the model is loaded. Under ZeRO-3 the
HfDeepSpeedConfig that TrainingArguments.__post_init__ creates is what makes from_pretrained partition the
weights while loading, so the arguments must come first; this shows the order with the real libraries."""
import functools
import os

_LOG = os.environ.get("RFT_TEST_ORDER_LOG")
if _LOG:
    import transformers

    def _note(what):
        with open(_LOG, "a", encoding="utf-8") as f:
            f.write(what + "\n")

    _post_init = transformers.TrainingArguments.__post_init__

    @functools.wraps(_post_init)
    def _spied_post_init(self, *a, **k):
        out = _post_init(self, *a, **k)
        _note("TrainingArguments")
        return out

    transformers.TrainingArguments.__post_init__ = _spied_post_init
    _from_pretrained = transformers.AutoModelForCausalLM.from_pretrained

    @functools.wraps(_from_pretrained)
    def _spied_from_pretrained(*a, **k):
        _note("from_pretrained")
        return _from_pretrained(*a, **k)

    transformers.AutoModelForCausalLM.from_pretrained = _spied_from_pretrained
