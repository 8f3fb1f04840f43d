//go:build !purego

#include "textflag.h"

// func dotAVX2(a, b *int8, n int) int32: see dot_amd64.go. Four int32
// accumulators of eight lanes hide the multiply-add latency; the lanes are
// summed at the end, which the caller keeps within int32 (dotChunk).
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	CMPQ CX, $64
	JLT tail32
loop64:
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD Y3, Y2, Y2
	VPADDD Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD Y5, Y4, Y4
	VPADDD Y4, Y1, Y1
	VPMOVSXBW 32(SI), Y2
	VPMOVSXBW 32(DI), Y3
	VPMADDWD Y3, Y2, Y2
	VPADDD Y2, Y6, Y6
	VPMOVSXBW 48(SI), Y4
	VPMOVSXBW 48(DI), Y5
	VPMADDWD Y5, Y4, Y4
	VPADDD Y4, Y7, Y7
	ADDQ $64, SI
	ADDQ $64, DI
	SUBQ $64, CX
	CMPQ CX, $64
	JGE loop64
tail32:
	CMPQ CX, $32
	JLT done
	VPMOVSXBW (SI), Y2
	VPMOVSXBW (DI), Y3
	VPMADDWD Y3, Y2, Y2
	VPADDD Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD Y5, Y4, Y4
	VPADDD Y4, Y1, Y1
done:
	VPADDD Y1, Y0, Y0
	VPADDD Y7, Y6, Y6
	VPADDD Y6, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET

// func prefetch(p *int8, n int, norm *int64): PREFETCHT0 every 64-byte
// line of p[:n] (n > 0), and norm's. A hint only: it reads nothing the
// caller sees.
TEXT ·prefetch(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ norm+16(FP), AX
	PREFETCHT0 (AX)
	LEAQ (SI)(CX*1), DI
	ANDQ $-64, SI
more:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, DI
	JLT more
	RET
