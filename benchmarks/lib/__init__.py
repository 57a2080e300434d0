"""The benchmarks' library: what the scripts in benchmarks/ and the tests share, one job per module.

Running and measuring: paths (where files go), report (markdown tables, results written), measure (timing in turns,
CPU accounting), load (a served store under h2load and a sequential caller), soak (a server under sustained load).
Real `neardup` and redis-server processes are started by the tests' launcher, tests/server_process.py.
Corpora: data (the files in benchmarks/data), sources (real texts on the machine), edits (republishing a text),
devcorpus and devcorpus_sets (the development corpus and its result sets), families, family_sets and rewrites
(the issue-25 families), jobads (the labelled job-ad set, a package).
Measurements' parts: quality_methods, quality_counts and quality_report (detection quality), sketching, kernel_sets
and kernel_baseline (the pair kernel), store_content, similar_corpus, similar_queries and similar_run (corpus
search), request_path, harness_inprocess, harness_report and gil_profile (the service's cost), fuzz (the fuzz
properties' inputs and checks).
"""
