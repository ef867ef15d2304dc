# Seed 000: "Stateful code context (recommended for agents)", with AsyncSandbox
import asyncio
import base64
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)
    # setup: the example reads /workspace/sales.csv
    await sandbox.filesystem.write("/workspace/sales.csv", open(__file__.rsplit("/", 2)[0] + "/data/sales.csv").read())
    ctx = await sandbox.create_code_context()

    # State persists across cells, exactly like a notebook.
    await ctx.run_code("import pandas as pd")
    await ctx.run_code("df = pd.read_csv('/workspace/sales.csv')")

    # A DataFrame comes back as an HTML table — no stdout parsing.
    ex = await ctx.run_code("df.describe()")
    print(ex.results[0].html)        # "<table>...</table>"
    assert "<table" in ex.results[0].html and "revenue" in ex.results[0].html  # check

    # A chart comes back as a base64 PNG — no save-to-disk, no second download.
    ex = await ctx.run_code("""
import matplotlib.pyplot as plt
df['revenue'].plot()
plt.show()
""")
    png_b64 = ex.png                 # ready to send to the model or render
    assert base64.b64decode(png_b64)[:8] == b"\x89PNG\r\n\x1a\n"  # check
    assert ex.results[0].chart is not None and ex.error is None  # check

    await ctx.close()        # or: async with await sandbox.create_code_context() as ctx: ...
    await sandbox.kill()


asyncio.run(main())
