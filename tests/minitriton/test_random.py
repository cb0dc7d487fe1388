"""tl.rand/randn/randint4x: Philox 4x32-10 bit for bit (Random123's known answers), values that
depend only on (seed, offset), and the distributions they promise."""
import numpy as np
import pytest

import minitriton
import minitriton.language as tl

# Random123's kat_vectors for philox4x32_10 and philox4x64_10: (counter, key) -> output
KAT32 = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
         ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
         ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
          (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
KAT64 = [((0,) * 4, (0, 0), (0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b,
                             0x7e68b68aec7ba23b)),
         ((2**64 - 1,) * 4, (2**64 - 1,) * 2, (0x87b092c3013fe90b, 0x438c3c67be8d0224,
                                               0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0))]


@minitriton.jit
def philox_kernel(words_ptr, out_ptr):
    c0 = tl.load(words_ptr + 0)
    c1 = tl.load(words_ptr + 1)
    c2 = tl.load(words_ptr + 2)
    c3 = tl.load(words_ptr + 3)
    k0 = tl.load(words_ptr + 4)
    k1 = tl.load(words_ptr + 5)
    r0, r1, r2, r3 = tl.philox_impl(c0, c1, c2, c3, k0, k1)
    tl.store(out_ptr + 0, r0)
    tl.store(out_ptr + 1, r1)
    tl.store(out_ptr + 2, r2)
    tl.store(out_ptr + 3, r3)


@minitriton.jit
def random_kernel(seed, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(out_ptr + 0 * n + offs, r0.to(tl.int32, bitcast=True), mask=mask)
    tl.store(out_ptr + 1 * n + offs, r1.to(tl.int32, bitcast=True), mask=mask)
    tl.store(out_ptr + 2 * n + offs, r2.to(tl.int32, bitcast=True), mask=mask)
    tl.store(out_ptr + 3 * n + offs, r3.to(tl.int32, bitcast=True), mask=mask)
    tl.store(out_ptr + 4 * n + offs, tl.rand(seed, offs).to(tl.int32, bitcast=True), mask=mask)
    tl.store(out_ptr + 5 * n + offs, tl.randn(seed, offs).to(tl.int32, bitcast=True), mask=mask)


def run_random(seed, n, block):
    out = np.zeros(6 * n, np.int32)
    random_kernel[(triton_cdiv(n, block),)](seed, out, n, BLOCK=block)
    words = out.reshape(6, n)
    return words[:4].view(np.uint32), words[4].view(np.float32), words[5].view(np.float32)


def triton_cdiv(a, b):
    return (a + b - 1) // b


def philox_reference(counter, key, bits=32, rounds=10):
    """Philox4xW straight from the Random123 paper, one element at a time in Python ints."""
    mask = (1 << bits) - 1
    ma, mb = (0xD2511F53, 0xCD9E8D57) if bits == 32 else (0xD2E7470EE14C6C93, 0xCA5A826395121157)
    ka, kb = (0x9E3779B9, 0xBB67AE85) if bits == 32 else (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0, p1 = ma * c0, mb * c2
        c0, c1, c2, c3 = (p1 >> bits) ^ c1 ^ k0, p1 & mask, (p0 >> bits) ^ c3 ^ k1, p0 & mask
        k0, k1 = (k0 + ka) & mask, (k1 + kb) & mask
    return c0, c1, c2, c3


@pytest.mark.parametrize("counter,key,want", KAT32)
def test_philox4x32_10_known_answers(counter, key, want):
    out = np.zeros(4, np.uint32)
    philox_kernel[(1,)](np.array(counter + key, np.uint32), out)
    assert [int(v) for v in out] == list(want)
    assert philox_reference(counter, key) == want


@pytest.mark.parametrize("counter,key,want", KAT64)
def test_philox4x64_10_known_answers(counter, key, want):
    out = np.zeros(4, np.uint64)
    philox_kernel[(1,)](np.array(counter + key, np.uint64), out)
    assert [int(v) for v in out] == list(want)


@pytest.mark.usefixtures("executor")
@pytest.mark.parametrize("seed", [0, 12345, -7, 2**31 - 1])
def test_randint4x_matches_a_per_element_reference(seed):
    n = 300
    ints, _, _ = run_random(seed, n, 128)
    key = ((seed & 0xFFFFFFFF), (seed >> 32) & 0xFFFFFFFF)  # the int32 seed sign-extends
    want = np.array([philox_reference((i, 0, 0, 0), key) for i in range(n)], np.uint64).T
    np.testing.assert_array_equal(ints, want.astype(np.uint32))


@pytest.mark.usefixtures("executor")
def test_rand_is_the_folded_word_times_the_scale():
    n = 1000
    ints, uniform, _ = run_random(42, n, 256)
    folded = ints[0].view(np.int32)
    folded = np.where(folded < 0, ~folded, folded)
    np.testing.assert_array_equal(uniform, folded.astype(np.float32) * np.float32(4.6566127342e-10))
    assert uniform.min() >= 0 and uniform.max() < 1


def test_values_depend_only_on_seed_and_offset():
    # one program of 1024 lanes, 8 of 128, 30 of 32 (with a masked tail): the same numbers
    results = [run_random(7, 1000, block) for block in (1024, 128, 32)]
    for ints, uniform, normal in results[1:]:
        np.testing.assert_array_equal(ints, results[0][0])
        np.testing.assert_array_equal(uniform, results[0][1])
        np.testing.assert_array_equal(normal, results[0][2])


def test_seeds_give_different_streams():
    a, b = run_random(1, 256, 256)[0], run_random(2, 256, 256)[0]
    assert (a != b).mean() > 0.99


def test_distribution_moments():
    n = 2**16
    _, uniform, normal = run_random(2024, n, 1024)
    # 5-sigma bounds for n samples: mean sd 1/sqrt(12 n); normal mean sd 1/sqrt(n), var sd sqrt(2/n)
    assert abs(uniform.mean() - 0.5) < 5 / np.sqrt(12 * n)
    assert abs(uniform.var() - 1 / 12) < 5 * np.sqrt(1 / (180 * n))
    assert abs(normal.mean()) < 5 / np.sqrt(n)
    assert abs(normal.var() - 1) < 5 * np.sqrt(2 / n)
    assert np.histogram(uniform, 16, (0, 1))[0].min() > n / 16 * 0.9


def test_randn_is_box_muller_of_the_first_two_words():
    n = 256
    ints, _, normal = run_random(3, n, 256)
    u = [np.where(w.view(np.int32) < 0, ~w.view(np.int32), w.view(np.int32)).astype(np.float32)
         * np.float32(4.6566127342e-10) for w in ints[:2]]
    u1 = np.maximum(np.float32(1e-7), u[0]).astype(np.float64)
    want = np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u[1].astype(np.float64))
    np.testing.assert_allclose(normal, want, rtol=1e-5, atol=1e-5)


@minitriton.jit
def bad_philox_kernel(out_ptr):
    x = tl.arange(0, 16).to(tl.int16)
    tl.store(out_ptr + tl.arange(0, 16), tl.randint(0, x).to(tl.int32))


def test_philox_rejects_16_bit_offsets():
    with pytest.raises(minitriton.CompilationError, match="bitwidth not supported in philox"):
        bad_philox_kernel[(1,)](np.zeros(16, np.int32))
