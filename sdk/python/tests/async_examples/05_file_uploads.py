# Seed 000: "File uploads", with AsyncSandbox
import asyncio
import os, shutil
from pandastack import AsyncSandbox


async def main():
    # setup: the example reads ./data.csv
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", "data", "data.csv"), "./data.csv")

    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)
    await sandbox.filesystem.write("/workspace/data.csv", open("./data.csv", "r").read())
    result = await sandbox.run_code("""
import pandas as pd
df = pd.read_csv('/workspace/data.csv')
print(df.describe())
""", language="python")
    print(result.stdout)
    assert "revenue" in result.stdout and "mean" in result.stdout  # check

    await sandbox.filesystem.upload("./data.csv", "/workspace/data.csv")
    await sandbox.run_code("""
import pandas as pd
pd.read_csv('/workspace/data.csv').to_csv('/workspace/result.csv', index=False)
""", language="python")  # setup: something to download
    await sandbox.filesystem.download("/workspace/result.csv", "./result.csv")
    assert open("./result.csv").read().splitlines()[0] == "month,region,revenue,units"  # check
    await sandbox.kill()


asyncio.run(main())
