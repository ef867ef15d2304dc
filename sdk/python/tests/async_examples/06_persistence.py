# Seed 000: "Persistence", with AsyncSandbox
import asyncio
import json
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)
    # setup: a notebook file to download
    await sandbox.filesystem.write("/workspace/notebook.ipynb", json.dumps({"cells": [], "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))

    await sandbox.set_ttl(7200)
    await sandbox.filesystem.download("/workspace/notebook.ipynb", "./notebook.ipynb")
    await sandbox.kill()
    assert json.load(open("./notebook.ipynb"))["nbformat"] == 4  # check


asyncio.run(main())
