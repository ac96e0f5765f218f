"""``python -m bertkit`` is the same as the ``bertkit`` console command."""

from bertkit._entry import main

if __name__ == "__main__":
    main()
