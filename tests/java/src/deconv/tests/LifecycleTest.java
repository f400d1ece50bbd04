package deconv.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import deconv.DeconvException;
import deconv.DeconvParams;
import deconv.Deconvolution;
import deconv.Mode;
import deconv.Pass;
import deconv.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** close(), use after close, forgotten handles and concurrent use. */
class LifecycleTest {
    @Test
    void closeTwiceIsHarmlessAndUseAfterCloseThrows() {
        Deconvolution d = new Deconvolution(ErrorsTest.small().mode(Mode.TRAINING));
        float[] src = new float[18], w = new float[16], b = new float[2], dst = new float[32];
        d.forward(src, w, b, dst);
        d.close();
        d.close();
        ErrorsTest.fails(Status.INVALID_ARGUMENT, "handle", () -> d.forward(src, w, b, dst));
        ErrorsTest.fails(Status.INVALID_ARGUMENT, "closed", () -> d.backward(src, w, dst, src, w, b));
        ErrorsTest.fails(Status.INVALID_ARGUMENT, "handle", () -> d.setWeights(w, b));
        ErrorsTest.fails(Status.INVALID_ARGUMENT, "handle", () -> d.implName(Pass.FORWARD));
        assertEquals(32, d.dstSize(), "sizes stay available");
    }

    /** Unreachable handles are freed by the Cleaner; this only checks nothing breaks doing so. */
    @Test
    void forgottenHandlesAreCollected() {
        for (int i = 0; i < 50; i++) new Deconvolution(ErrorsTest.small()).forward(new float[18], new float[16],
                new float[2], new float[32]);
        System.gc();
        try (Deconvolution d = new Deconvolution(ErrorsTest.small())) {
            d.forward(new float[18], new float[16], new float[2], new float[32]);
        }
    }

    @Test
    void concurrentForwardsOnOneHandleAgree() throws Exception {
        DeconvParams p = ForwardTest.problem2d();
        try (Deconvolution d = new Deconvolution(p)) {
            float[] src = Data.values((int) d.srcSize(), 50);
            float[] w = Data.values((int) d.weightsSize(), 51);
            float[] b = Data.values((int) d.biasSize(), 52);
            double[] expected = new Reference(p, d.outputShape()).forward(src, w, b);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(new Thread(() -> {
                    try {
                        float[] dst = new float[(int) d.dstSize()];
                        for (int i = 0; i < 25; i++) {
                            d.forward(src, w, b, dst);
                            assertArrayEquals(expected, Data.toDouble(dst), 0.0);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) t.join();
            if (failure.get() != null) throw new AssertionError(failure.get());
        }
    }

    /** close() waits for running calls; calls after it fail cleanly ("closed"), never crash. */
    @Test
    void closeDuringCallsIsSafe() throws Exception {
        Deconvolution d = new Deconvolution(ForwardTest.problem2d());
        float[] src = new float[(int) d.srcSize()], w = new float[(int) d.weightsSize()];
        float[] b = new float[(int) d.biasSize()];
        AtomicInteger closedSeen = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(3);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            threads.add(new Thread(() -> {
                float[] dst = new float[(int) d.dstSize()];
                started.countDown();
                try {
                    while (true) d.forward(src, w, b, dst);
                } catch (DeconvException e) {
                    if (e.getMessage().contains("closed")) closedSeen.incrementAndGet();
                    else failure.compareAndSet(null, e);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        threads.forEach(Thread::start);
        started.await();
        Thread.sleep(20);
        d.close();
        for (Thread t : threads) t.join();
        if (failure.get() != null) throw new AssertionError(failure.get());
        assertEquals(3, closedSeen.get());
        assertTrue(d.outputShape().length == 2);
    }
}
