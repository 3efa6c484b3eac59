"""Allow ``python -m advisor``."""

from advisor.cli.app import main

if __name__ == "__main__":
    main()
