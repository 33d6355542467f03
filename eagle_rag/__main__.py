"""``python -m eagle_rag``: the same entry point as the ``eagle-rag`` console script."""

from eagle_rag.launcher import main

if __name__ == "__main__":
    main()
