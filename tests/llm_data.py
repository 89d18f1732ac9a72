"""A small data folder in the layouts of ``../shared/data/llm`` (and the XSum calibration sample), for
the LLM-task tests: every reader of ``forgetless/llm/tasks/offline.py`` gets a few real-looking items."""
from __future__ import annotations

import json
from pathlib import Path

QUESTIONS = [("Which gas do plants take in?", ["oxygen", "carbon dioxide", "helium", "neon"], "B"),
             ("What melts ice fastest?", ["salt", "sand", "paper", "wood"], "A"),
             ("Which is a mammal?", ["shark", "trout", "whale", "squid"], "C"),
             ("What makes a shadow?", ["blocked light", "sound", "heat", "wind"], "A"),
             ("Which planet is largest?", ["Mars", "Venus", "Earth", "Jupiter"], "D"),
             ("Which tool measures mass?", ["ruler", "balance", "clock"], "B")]


def _ai2(question: str, choices: list[str], key: str, number: int) -> dict:
    return {"id": f"q{number}", "question": {"stem": question, "choices": [
        {"text": text, "label": "ABCD"[i]} for i, text in enumerate(choices)]}, "answerKey": key}


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_llm_data(root: Path) -> Path:
    """``root/llm/…`` with every offline set, ``root/xsum/…`` calibration texts; returns ``root``."""
    llm = root / "llm"
    _jsonl(llm / "arc/ARC-Challenge-Test.subset.jsonl", [_ai2(q, c, k, i) for i, (q, c, k) in enumerate(QUESTIONS)])
    csv_rows = [f'"{q}",{",".join(c + [""] * (4 - len(c)))},{k}' for q, c, k in QUESTIONS]
    csv_rows.insert(2, '"A lost NYSED item?",,,,,3')  # options lost: dropped, as in the real copy
    (llm / "arc/llmcbench").mkdir(parents=True, exist_ok=True)
    (llm / "arc/llmcbench/arc_easy_test.csv").write_text("\n".join(csv_rows) + "\n", encoding="utf-8")
    _jsonl(llm / "openbookqa/Main/test.jsonl", [_ai2(q, c, k, i) for i, (q, c, k) in enumerate(QUESTIONS[:5])])
    _jsonl(llm / "piqa/valid_labeled.jsonl", [
        {"goal": "To dry wet shoes", "sol1": "stuff them with newspaper.", "sol2": "fill them with water.", "label": 0},
        {"goal": "To cut bread", "sol1": "use a spoon.", "sol2": "use a serrated knife.", "label": 1},
        {"goal": "To cool soup", "sol1": "stir it and wait.", "sol2": "put it in the oven.", "label": 0},
        {"goal": "To open a jar", "sol1": "freeze the lid.", "sol2": "run the lid under hot water.", "label": 1}])
    _jsonl(llm / "winogrande/dev.jsonl", [
        {"qID": "a", "sentence": "The trophy did not fit in the case because the _ was too big.", "option1": "trophy",
         "option2": "case", "answer": "1"},
        {"qID": "b", "sentence": "The trophy did not fit in the case because the _ was too small.", "option1": "trophy",
         "option2": "case", "answer": "2"},
        {"qID": "c", "sentence": "Anna gave Maria a book because _ had finished reading it.", "option1": "Anna",
         "option2": "Maria", "answer": "1"}])
    (llm / "hellaswag").mkdir(parents=True, exist_ok=True)
    items = [("Baking: A man mixes flour and water. he", "2", ["flies away.", "sings loudly.", "kneads the dough.",
                                                                "paints the wall."]),
             ("Swimming: A girl jumps into the pool. she", "0", ["swims to the other side.", "eats a sandwich.",
                                                                  "writes a letter.", "drives a car."]),
             ("Gardening: A woman digs a hole. she", "1", ["reads a map.", "plants a small tree.", "sleeps.",
                                                            "calls a taxi."])]
    (llm / "hellaswag/hellaswag_val_full.txt").write_text(
        "".join(f"{ctx}\n{label}\n" + "".join(e + "\n" for e in ends) for ctx, label, ends in items), encoding="utf-8")
    (llm / "wikitext2").mkdir(parents=True, exist_ok=True)
    lines = [" = Robert Boulter = ", " Robert Boulter is an English film , television and theatre actor . ",
             " = = Career = = ", " He had a guest @-@ starring role on the television series The Bill in 2000 . ",
             " = Du Fu = ", " Du Fu was a prominent Chinese poet of the Tang dynasty . ",
             " Along with Li Bai , he is frequently called the greatest of the Chinese poets . "]
    (llm / "wikitext2/wiki.test.raw").write_bytes("".join(line + "\r\n" for line in lines).encode("utf-8"))
    _jsonl(root / "xsum/test_1000_llm_decoding.jsonl",
           [{"document": f"News item {i}: the council met on Tuesday and agreed a new budget for the town.",
             "summary": "budget", "id": str(i)} for i in range(6)])
    return root


IFEVAL = [{"key": 1, "prompt": "Write two lines about rain, all in lowercase.",
           "instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
          {"key": 2, "prompt": "Describe a cat without using any commas.", "instruction_id_list": ["punctuation:no_comma"],
           "kwargs": [{}]},
          {"key": 3, "prompt": "Name a fruit. End your answer with the phrase 'Is there anything else?'",
           "instruction_id_list": ["startend:end_checker"], "kwargs": [{"end_phrase": "Is there anything else?"}]}]


def write_generation_data(root: Path, **replace) -> Path:
    """``root`` with the sets of the generation suite (``llm-generation``) in the data folder's layouts, three
    items each; ``replace``: a set's rows swapped for others (``ifeval=[]``: a prompt file without prompts)."""
    sets = {"ifeval": IFEVAL,
            "gsm8k": [{"question": f"Tom has {n} apples and buys 2 more. How many apples does he have?",
                       "answer": f"{n} + 2 = <<{n}+2={n + 2}>>{n + 2}\n#### {n + 2}"} for n in (3, 5, 7)],
            "xsum": [{"document": f"The council met on {d} and agreed a new budget for the town.", "summary":
                      f"A budget was agreed on {d}.", "id": d} for d in ("Monday", "Tuesday", "Friday")],
            "samsum": [{"context": f"A: Shall we meet at {h}?\r\nB: Yes, see you then.", "response": f"They meet at {h}."}
                       for h in ("noon", "six", "nine")],
            "tweetqa": [{"Question": "who won the match?", "Answer": ["the reds", "reds"], "qid": str(i),
                         "Tweet": f"What a game! The Reds won the match {i}-0 tonight."} for i in (1, 2, 3)]}
    sets.update(replace)
    _jsonl(root / "llm/ifeval/input_data.jsonl", sets["ifeval"])
    _jsonl(root / "llm/gsm8k/test.jsonl", sets["gsm8k"])
    _jsonl(root / "samsum/validation_context_response.jsonl", sets["samsum"])
    _jsonl(root / "xsum/test_1000_llm_decoding.jsonl", sets["xsum"])
    (root / "tweetqa").mkdir(parents=True, exist_ok=True)
    (root / "tweetqa/dev.json").write_text(json.dumps(sets["tweetqa"]), encoding="utf-8")
    return root
