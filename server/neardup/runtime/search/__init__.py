"""The search indexes FindSimilar, `neardup pairs` and `neardup cluster` search instead of the store's postings
(`--search-index`), each built of core/postings_index.py's PostingsIndex:

  base_file.py  the search index file: the base every process of a host maps (`neardup search-index` builds it)
  delta.py      what an index holds beyond its base: the store's writes since, read again and put or deleted
  memory.py     `--search-index memory`: each serving process's own copy, built at start
  shared.py     `--search-index shared`: the file mapped by every serving process, each with its own delta
"""
