"""Serving a saved folder in vLLM, checked against forgetless's own model of it.

* ``check.serve_check(folder)``: vLLM's greedy answers to a fixed prompt set against forgetless's
  (identical, or the first differing token and the log-probability gap there); ``forgetless
  serve-check FOLDER`` on the command line;
* ``speed.served_speed(base_folder, folder)``: generated tokens/s and time to first token of both in
  vLLM, interleaved (the card's "Served in vLLM" under ``--speed``);
* ``engine``: whether vLLM is installed, and a request run in a process of its own (``worker.py``).

vLLM is optional: without it each of these answers one line saying how to install it.
"""
