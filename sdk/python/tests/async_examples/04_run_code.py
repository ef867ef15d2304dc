# Seed 000: "Run Python code", with AsyncSandbox
import asyncio
from pandastack import AsyncSandbox


async def main():
    sandbox = await AsyncSandbox.create(template="code-interpreter", ttl_seconds=3600)

    out = await sandbox.run_code("""
x = 42
y = x * 2
print(x, y)
""", language="python")
    print(out.stdout)  # "42 84\n"
    assert out.stdout == "42 84\n"  # check

    out = await sandbox.run_code("python --version", language="shell")
    print(out.stdout)
    assert out.stdout.startswith("Python 3")  # check
    await sandbox.kill()


asyncio.run(main())
