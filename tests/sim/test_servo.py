"""xArm servo model: analytic step response, limits, Jacobians, asynchronous command replay."""

import numpy as np
import pytest

from sim2real.sim.servo import CommandHistory, ServoParams, advance_servo, delay_split, servo_step


def _run(u: np.ndarray, tau: float, delay: float, dt: float, n: int, servo: ServoParams | None = None):
    servo = servo or ServoParams(tau=tau, delay=delay)
    shift, lead = delay_split(delay, dt)
    q, v = np.zeros(6), np.zeros(6)
    qs, vs = [q], [v]
    commands = [u] * n
    zero = np.zeros(6)
    for k in range(n):
        early = commands[k - shift - 1] if k - shift - 1 >= 0 else zero
        late = commands[k - shift] if k - shift >= 0 else zero
        step = servo_step(q, v, early, late, lead, dt, servo)
        q, v = step.position, step.velocity
        qs.append(q)
        vs.append(v)
    return np.array(qs), np.array(vs)


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.025])
def test_step_response_is_delayed_first_order_lag(delay):
    tau, dt, n = 0.05, 0.01, 60
    u = np.linspace(-0.3, 0.3, 6)
    qs, vs = _run(u, tau, delay, dt, n)
    t = np.arange(n + 1) * dt
    s = np.clip(t - delay, 0.0, None)
    v_exact = np.outer(1 - np.exp(-s / tau), u)
    q_exact = np.outer(s - tau * (1 - np.exp(-s / tau)), u)
    np.testing.assert_allclose(vs, v_exact, atol=1e-12)
    np.testing.assert_allclose(qs, q_exact, atol=1e-12)


def test_delay_split():
    assert delay_split(0.0, 0.01) == (0, 0.0)
    shift, lead = delay_split(0.025, 0.01)
    assert shift == 2 and lead == pytest.approx(0.005)
    shift, lead = delay_split(0.03, 0.01)
    assert shift == 3 and lead == pytest.approx(0.0, abs=1e-12)


def test_velocity_and_acceleration_limits():
    servo = ServoParams(tau=0.001, delay=0.0, max_velocity=np.pi, max_acceleration=20.0)
    _qs, vs = _run(np.full(6, 10.0), 0.001, 0.0, 0.01, 40, servo)
    dv = np.diff(vs[:, 0])
    assert np.all(dv <= 20.0 * 0.01 + 1e-12)
    assert np.max(np.abs(vs)) <= np.pi + 1e-12
    assert vs[-1, 0] == pytest.approx(np.pi)


def test_jacobians_match_finite_differences():
    rng = np.random.default_rng(3)
    q0, v0 = rng.normal(size=6), rng.normal(scale=0.2, size=6)
    ue, ul = rng.normal(scale=0.3, size=6), rng.normal(scale=0.3, size=6)
    dt, lead, tau = 0.01, 0.004, 0.05
    servo = ServoParams(tau=tau, delay=0.0)
    step = servo_step(q0, v0, ue, ul, lead, dt, servo)
    eps = 1e-7

    def fd(fun):
        return (fun(eps) - fun(-eps)) / (2 * eps)

    def at(**kw):
        args = {"q0": q0, "v0": v0, "ue": ue, "ul": ul, "lead": lead, "tau": tau} | kw
        s = servo_step(args["q0"], args["v0"], args["ue"], args["ul"], args["lead"], dt,
                       ServoParams(tau=args["tau"], delay=0.0))
        return np.concatenate([s.position, s.velocity])

    checks = {
        "v0": (lambda h: at(v0=v0 + h), np.concatenate([step.dq_dv0, step.dv_dv0])),
        "ue": (lambda h: at(ue=ue + h), np.concatenate([step.dq_du_early, step.dv_du_early])),
        "ul": (lambda h: at(ul=ul + h), np.concatenate([step.dq_du_late, step.dv_du_late])),
        "tau": (lambda h: at(tau=tau + h), np.concatenate([step.dq_dtau, step.dv_dtau])),
        "lead": (lambda h: at(lead=lead + h), np.concatenate([step.dq_dlead, step.dv_dlead])),
    }
    for name, (fun, analytic) in checks.items():
        np.testing.assert_allclose(analytic, fd(fun), rtol=1e-5, atol=1e-8, err_msg=name)


def test_asynchronous_replay_matches_stepped_servo():
    """The emulator's event-driven integration equals the simulator's stepping."""
    dt, tau, delay = 0.01, 0.04, 0.013
    servo = ServoParams(tau=tau, delay=delay)
    rng = np.random.default_rng(5)
    commands = rng.normal(scale=0.15, size=(50, 6))  # below the acceleration limit
    history = CommandHistory(6, delay)
    q, v = np.zeros(6), np.zeros(6)
    for k, u in enumerate(commands):
        history.push(k * dt, u)
        q, v = advance_servo(q, v, history, k * dt, (k + 1) * dt, servo)
    shift, lead = delay_split(delay, dt)
    q2, v2 = np.zeros(6), np.zeros(6)
    zero = np.zeros(6)
    for k in range(len(commands)):
        early = commands[k - shift - 1] if k - shift - 1 >= 0 else zero
        late = commands[k - shift] if k - shift >= 0 else zero
        s = servo_step(q2, v2, early, late, lead, dt, servo)
        q2, v2 = s.position, s.velocity
    np.testing.assert_allclose(q, q2, atol=1e-12)
    np.testing.assert_allclose(v, v2, atol=1e-12)
