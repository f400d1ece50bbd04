package deconv;

import java.nio.Buffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;

/**
 * Checks a caller's buffer before its memory goes to native code, which cannot check anything:
 * the element count against the problem, and for NIO buffers that they are direct (the native
 * side takes their address), in native byte order (the library reads raw floats/words) and, for
 * outputs, writable.
 */
final class Buffers {
    private Buffers() {
    }

    /** The element type of a float[]/FloatBuffer (F32) or short[]/ShortBuffer (BF16). */
    static DType dtypeOf(Object buffer) {
        return buffer instanceof float[] || buffer instanceof FloatBuffer ? DType.F32 : DType.BF16;
    }

    /**
     * Checks a non-null buffer of at least {@code need} elements and returns what to hand to
     * DeconvNative: the array itself, or the NIO buffer sliced at its position (the native side
     * takes a direct buffer's base address). Positions and limits of the caller's buffer are
     * left unchanged.
     */
    static Object check(String name, Object buffer, long need, boolean output) {
        if (buffer instanceof float[]) return checkLength(name, buffer, ((float[]) buffer).length, need, "");
        if (buffer instanceof short[]) return checkLength(name, buffer, ((short[]) buffer).length, need, "");
        Buffer nio = (Buffer) buffer;
        String kind = buffer instanceof FloatBuffer ? "FloatBuffer" : "ShortBuffer";
        ByteOrder order = buffer instanceof FloatBuffer ? ((FloatBuffer) buffer).order() : ((ShortBuffer) buffer).order();
        int bytes = buffer instanceof FloatBuffer ? 4 : 2;
        if (!nio.isDirect())
            throw DeconvException.invalid(name + ": a heap " + kind + " cannot be passed without a copy; use a direct "
                    + "buffer, e.g. ByteBuffer.allocateDirect(n * " + bytes + ").order(ByteOrder.nativeOrder()).as"
                    + kind + "()");
        if (order != ByteOrder.nativeOrder())
            throw DeconvException.invalid(name + ": the " + kind + " has byte order " + order
                    + "; the library needs ByteOrder.nativeOrder() (" + ByteOrder.nativeOrder() + ")");
        if (output && nio.isReadOnly()) throw DeconvException.invalid(name + ": a read-only " + kind);
        checkLength(name, buffer, nio.remaining(), need, " remaining");
        if (nio.position() == 0) return buffer;
        return buffer instanceof FloatBuffer ? ((FloatBuffer) buffer).slice() : ((ShortBuffer) buffer).slice();
    }

    private static Object checkLength(String name, Object buffer, long have, long need, String what) {
        if (have < need)
            throw DeconvException.invalid(name + ": " + have + " elements" + what + ", the problem needs " + need);
        return buffer;
    }
}
