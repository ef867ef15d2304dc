# Seed 000: "Close the context (or kill the sandbox) when done", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)
    async with await sandbox.create_code_context() as ctx:
        await ctx.run_code("x = 41")
        ex = await ctx.run_code("x + 1")
        assert ex.text == "42", ex.text  # check
        ex = await ctx.run_code("1/0")
        assert ex.error is not None and "ZeroDivisionError" in str(ex.error)  # check
    await sandbox.kill()


asyncio.run(main())
