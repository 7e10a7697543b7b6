"""The layouts people's datasets come in, converted to the forms TRL defines, and the label mask of each row.

Layouts (detected from a row's columns, as TRL, Axolotl and LLaMA-Factory detect them):
  chat               `messages` or `conversations`: OpenAI form (role/content) or ShareGPT form (from/value, roles
                     human/gpt/...), turned into OpenAI form with the roles TRL's templates know
  prompt_completion  `prompt` + `completion`, each a string or a list of messages
  alpaca             `instruction` (+ `input`) + `output` (+ `system`): a prompt/completion pair
  text               the text field (data.text_field, default `text`)

Loss by default, as those tools train: chat on the assistant turns only, prompt/completion on the completion only,
text on every token; `data.train_on_prompt: true` trains on every token of every row.

The tokenizer is passed in: nothing here imports a library, so the detection and conversion are tested without one.
"""

import json
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# ShareGPT's role names (and the variants of the datasets built on it) -> the roles chat templates render.
# function_call is the assistant calling a tool; observation and function are the tool's answer
# (LLaMA-Factory's and OpenAI's legacy names for it).
SHAREGPT_ROLES = {
    "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "model": "assistant",
    "chatgpt": "assistant", "bard": "assistant", "bing": "assistant", "system": "system", "tool": "tool",
    "function_call": "assistant", "observation": "tool", "function": "tool", "ipython": "tool",
}
TARGET_ROLES = ("system", "user", "assistant", "tool")
CHAT_COLUMNS = ("messages", "conversations")
# Rows whose rendered text is shared by more than this part of a dataset teach one sentence, not a task.
IDENTICAL_SHARE = 0.9
IDENTICAL_MIN_ROWS = 4


class DataError(ValueError):
    """Data that would teach nothing: the message names the file, the row (1-based) and the column."""

    def __init__(self, source: str, row: Optional[int], column: Optional[str], why: str) -> None:
        where = source + ("" if row is None else " row %d" % row) + ("" if column is None else ", column %r" % column)
        super().__init__("%s: %s" % (where, why))
        self.source, self.row, self.column, self.why = source, row, column, why

    def fields(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"file": self.source}
        if self.row is not None:
            out["row"] = self.row
        if self.column is not None:
            out["column"] = self.column
        return out


def role_map(override: Any) -> Dict[str, str]:
    """data.roles: {dataset role: role} (`{bot: assistant}`), or Axolotl's {role: [dataset roles]}
    (`{assistant: [gpt, bot]}`); either way added to the ShareGPT names."""
    roles = dict(SHAREGPT_ROLES)
    if not isinstance(override, dict):
        return roles
    for key, value in override.items():
        if isinstance(value, str):
            roles[str(key)] = value
        elif isinstance(value, list):
            for name in value:
                roles[str(name)] = str(key)
    return roles


def detect(row: Dict[str, Any], text_field: str = "text") -> str:
    """The layout of one row: preference, chat, prompt_completion, alpaca or text; '' when none fits."""
    # A column whose value is None is absent: JSON and Parquet readers give every row every column of the file.
    has = lambda col: row.get(col) is not None  # noqa: E731
    if has("chosen") and has("rejected"):
        return "preference"  # before chat: conversational preference rows hold message lists too
    for col in CHAT_COLUMNS:
        if isinstance(row.get(col), list):
            return "chat"
    if has("prompt") and has("completion"):
        return "prompt_completion"
    if has("instruction") and has("output"):
        return "alpaca"
    if has(text_field):
        return "text"
    return ""


def describe_columns(row: Dict[str, Any], text_field: str) -> str:
    row = {k: v for k, v in row.items() if v is not None}
    return ("no column this trainer reads: it has %s; expected messages or conversations (chat), prompt + completion, "
            "instruction + output (Alpaca), or %r (text; data.text_field names another)" % (sorted(row), text_field))


def convert_messages(messages: Any, roles: Dict[str, str], source: str, row: int, column: str) -> List[Dict[str, str]]:
    """One conversation in OpenAI form. A message may use role/content or from/value (ShareGPT); a role that is
    neither known nor mapped by data.roles stops the run, since a template would drop or misplace it."""
    if not isinstance(messages, list) or not messages:
        raise DataError(source, row, column, "no messages (an empty or missing conversation)")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise DataError(source, row, column, "message %d is %s, not an object with role and content" % (i + 1, type(m).__name__))
        role = m.get("role", m.get("from"))
        content = m.get("content", m.get("value"))
        if role is None or content is None:
            raise DataError(source, row, column, "message %d has neither role/content nor from/value (keys: %s)" % (i + 1, sorted(m)))
        mapped = roles.get(str(role))
        if mapped not in TARGET_ROLES:
            raise DataError(source, row, column, "message %d has role %r, which no chat template renders; map it with data.roles "
                                                 "(e.g. roles: {%s: assistant})" % (i + 1, role, role))
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        out.append({"role": mapped, "content": content})
    return out


def alpaca_prompt(row: Dict[str, Any]) -> str:
    """LLaMA-Factory's reading of an Alpaca row: the instruction and the input, a line apart, are the user's turn."""
    parts = [str(row.get(k) or "") for k in ("instruction", "input")]
    return "\n".join(p for p in parts if p)


# The Alpaca paper's prompt, for tokenizers without a chat template (what Axolotl's `type: alpaca` renders).
ALPACA_WITH_INPUT = ("Below is an instruction that describes a task, paired with an input that provides further context. "
                     "Write a response that appropriately completes the request.\n\n"
                     "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n")
ALPACA_NO_INPUT = ("Below is an instruction that describes a task. Write a response that appropriately completes the request.\n\n"
                   "### Instruction:\n{instruction}\n\n### Response:\n")


def to_trl(row: Dict[str, Any], layout: str, *, chat: bool, roles: Dict[str, str], text_field: str, source: str,
           index: int) -> Dict[str, Any]:
    """The row in the form TRL's SFTTrainer takes: {messages}, {prompt, completion} (strings or message lists) or
    {text}. `chat`: the tokenizer has a chat template (Alpaca rows then become conversational). `index`: 1-based."""
    if layout == "preference":
        return to_preference(row, roles, source, index)
    if layout == "chat":
        col = next(c for c in CHAT_COLUMNS if isinstance(row.get(c), list))
        return {"messages": convert_messages(row[col], roles, source, index, col)}
    if layout == "prompt_completion":
        out = {}
        for col in ("prompt", "completion"):
            value = row.get(col)
            if isinstance(value, list):
                out[col] = convert_messages(value, roles, source, index, col)
            elif isinstance(value, str):
                out[col] = value
            else:
                raise DataError(source, index, col, "expected text or a list of messages, got %s" % type(value).__name__)
        if isinstance(out["prompt"], list) != isinstance(out["completion"], list):
            raise DataError(source, index, "completion", "prompt and completion must both be text or both be messages")
        return out
    if layout == "alpaca":
        for col in ("instruction", "output"):
            if not isinstance(row.get(col), str):
                raise DataError(source, index, col, "expected text, got %s" % type(row.get(col)).__name__)
        if chat:
            prompt = [{"role": "system", "content": str(row["system"])}] if row.get("system") else []
            prompt.append({"role": "user", "content": alpaca_prompt(row)})
            return {"prompt": prompt, "completion": [{"role": "assistant", "content": row["output"]}]}
        fmt = ALPACA_WITH_INPUT if row.get("input") else ALPACA_NO_INPUT
        return {"prompt": fmt.format(instruction=row["instruction"], input=row.get("input") or ""), "completion": row["output"]}
    if layout == "text":
        value = row.get(text_field)
        if not isinstance(value, str):
            raise DataError(source, index, text_field, "expected text, got %s" % type(value).__name__)
        return {"text": value}
    raise DataError(source, index, None, describe_columns(row, text_field))


# ---- token ids and the label mask --------------------------------------------------------------------------------

def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


_GENERATION = re.compile(r"\{%-?\s*generation\s*-?%\}")


def has_generation_markers(template: Any) -> bool:
    text = template if isinstance(template, str) else json.dumps(template or "")
    return bool(_GENERATION.search(text))


def _ids(x: Any) -> List[int]:
    # apply_chat_template(tokenize=True) returns a list (transformers 4) or a BatchEncoding (transformers 5).
    if isinstance(x, dict) or hasattr(x, "keys"):
        x = x["input_ids"]
    return list(x)


def chat_ids(tokenizer: Any, messages: List[Dict[str, str]], add_generation_prompt: bool = False) -> List[int]:
    return _ids(tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=add_generation_prompt))


def assistant_mask(tokenizer: Any, messages: List[Dict[str, str]]) -> Tuple[List[int], List[int]]:
    """(input_ids, mask) with 1 on the tokens of assistant turns. A template with {% generation %} markers says
    itself which tokens those are (transformers' return_assistant_tokens_mask, what TRL's assistant_only_loss
    uses). Without markers, prefix by prefix: a turn starts where the conversation up to it, rendered with the
    generation prompt, ends, and stops where the conversation up to and including it ends; each bound is taken as
    the common prefix with the whole conversation's tokens, so a template that closes a shorter conversation
    differently (Phi-3 adds EOS at the very end) trains on that only where the whole conversation has it."""
    if has_generation_markers(getattr(tokenizer, "chat_template", None)):
        out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
        return list(out["input_ids"]), list(out["assistant_masks"])
    full = chat_ids(tokenizer, messages)
    mask = [0] * len(full)
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        start = common_prefix(chat_ids(tokenizer, messages[:i], add_generation_prompt=True), full) if i else 0
        end = common_prefix(chat_ids(tokenizer, messages[:i + 1]), full)
        for k in range(start, end):
            mask[k] = 1
    return full, mask


def prompt_completion_mask(tokenizer: Any, prompt: Any, completion: Any) -> Tuple[List[int], List[int]]:
    """TRL's completion mask: the completion starts where the tokens of the prompt alone and of prompt + completion
    part (its common_prefix_length), so a token merged across the boundary counts as completion."""
    if isinstance(prompt, list):
        prompt_ids = chat_ids(tokenizer, prompt, add_generation_prompt=True)
        ids = chat_ids(tokenizer, prompt + completion)
    else:
        prompt_ids = list(tokenizer(prompt)["input_ids"])
        ids = list(tokenizer(prompt + completion)["input_ids"])
    n = common_prefix(prompt_ids, ids)
    return ids, [0] * n + [1] * (len(ids) - n)


def encode(tokenizer: Any, example: Dict[str, Any], *, train_on_prompt: bool) -> Tuple[List[int], List[int]]:
    """(input_ids, labels) of one converted row, labels -100 where the loss is not taken. Text and a text
    completion end with EOS, as TRL appends it, so the model learns where an example stops."""
    eos = tokenizer.eos_token or ""
    if "messages" in example:
        ids, mask = assistant_mask(tokenizer, example["messages"])
    elif "prompt" in example:
        completion = example["completion"]
        if isinstance(completion, str) and eos and not completion.endswith(eos):
            completion += eos
        ids, mask = prompt_completion_mask(tokenizer, example["prompt"], completion)
    else:
        text = example["text"]
        if eos and not text.endswith(eos):
            text += eos
        ids = list(tokenizer(text)["input_ids"])
        mask = [1] * len(ids)
    if train_on_prompt:
        mask = [1] * len(ids)
    return ids, [t if m else -100 for t, m in zip(ids, mask)]


def render_text(tokenizer: Any, example: Dict[str, Any]) -> str:
    """The whole text of a converted row (perplexity on an eval split reads this)."""
    if "messages" in example:
        return str(tokenizer.apply_chat_template(example["messages"], tokenize=False))
    if "prompt" in example:
        if isinstance(example["prompt"], list):
            return str(tokenizer.apply_chat_template(example["prompt"] + example["completion"], tokenize=False))
        return example["prompt"] + example["completion"] + (tokenizer.eos_token or "")
    return example["text"] + (tokenizer.eos_token or "")


def column_of(row: Dict[str, Any], layout: str, text_field: str) -> str:
    if layout == "chat":
        return next(c for c in CHAT_COLUMNS if isinstance(row.get(c), list))
    return {"prompt_completion": "completion", "alpaca": "output", "text": text_field}.get(layout, text_field)


def teaches_nothing(labels: Sequence[int], special_ids: Sequence[int]) -> bool:
    """No token the loss is taken on, or only special tokens (BOS/EOS/end-of-turn): the row renders empty."""
    special = set(special_ids)
    return not any(t != -100 and t not in special for t in labels)


def identical_rows(keys: Sequence[Any]) -> Optional[Tuple[int, int, List[int]]]:
    """(rows sharing one rendering, all rows, first such rows 1-based) when nearly all rows render the same."""
    n = len(keys)
    if n < IDENTICAL_MIN_ROWS:
        return None
    counts: Dict[Any, int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    key, top = max(counts.items(), key=lambda kv: kv[1])
    if top <= IDENTICAL_SHARE * n:
        return None
    return top, n, [i + 1 for i, k in enumerate(keys) if k == key][:3]


def weighted_indices(n: int, weight: float, seed: int) -> List[int]:
    """Rows of a source taken `weight` times: 2 repeats every row twice, 0.5 keeps a seeded half, 1.5 all rows
    and a seeded half again."""
    import random
    whole, frac = int(weight), weight - int(weight)
    out = [i for _ in range(whole) for i in range(n)]
    if frac > 0:
        pick = list(range(n))
        random.Random(seed).shuffle(pick)
        out.extend(sorted(pick[: int(round(frac * n))]))
    return out


def train_sources(spec_train: Any) -> List[Dict[str, Any]]:
    """data.train as a list of {path, weight, config?, split?}: one path, a list of paths, or a list of
    {path, weight, config, split} objects."""
    items = spec_train if isinstance(spec_train, list) else [spec_train]
    out = []
    for item in items:
        if isinstance(item, dict):
            d = dict(item)
            d["path"] = str(d.get("path", ""))
            d["weight"] = float(d.get("weight", 1.0))
            out.append(d)
        else:
            out.append({"path": str(item), "weight": 1.0})
    return out


Warn = Callable[[str, str], None]


def to_preference(row: Dict[str, Any], roles: Dict[str, str], source: str, index: int) -> Dict[str, Any]:
    """One preference row in TRL's form: chosen and rejected (strings, or message lists in OpenAI form), with the
    prompt when the row has one. Without a prompt TRL takes the shared start of chosen and rejected as the prompt
    (its implicit-prompt form); a conversational row may use ShareGPT's from/value, mapped as chat rows are."""
    out: Dict[str, Any] = {}
    for col in ("prompt", "chosen", "rejected"):
        value = row.get(col)
        if value is None:
            if col == "prompt":
                continue
            raise DataError(source, index, col, "a preference row needs both chosen and rejected")
        if isinstance(value, list):
            value = convert_messages(value, roles, source, index, col)
        elif not isinstance(value, str):
            raise DataError(source, index, col, "expected text or a list of messages, not %s" % type(value).__name__)
        out[col] = value
    if len({isinstance(v, str) for v in out.values()}) > 1:
        raise DataError(source, index, None, "prompt, chosen and rejected must all be text or all be messages (TRL reads one form per row)")
    return out
