# Seed 002: "Capturing rich results: run_code", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter")
    ctx = await sandbox.create_code_context()  # persistent Python kernel

    ex = await ctx.run_code("sum(range(101))")
    print(ex.text)        # "5050" — the kernel's repr of the last expression
    print(ex.stdout)      # anything the code printed
    assert ex.text == "5050" and ex.stdout == ""  # check

    ex = await ctx.run_code("print('hi'); 7")
    assert ex.stdout == "hi\n" and ex.text == "7"  # check

    await ctx.close()
    await sandbox.kill()


asyncio.run(main())
