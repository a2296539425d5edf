// Synchronous leader election (Itai & Rodeh), N=3 processes, K=2 values, as in PRISM's
// "leader_sync" case study; written for agentguard from the published description.
dtmc
const int N = 3;
const int K = 2;

module counter
	c : [1..N+1] init 1;
	[read] c<N -> (c'=c+1);
	[read] c=N -> (c'=N+1);
	[done] u1 | u2 | u3 -> (c'=c);
	[retry] !(u1 | u2 | u3) -> (c'=1);
	[loop] s1=3 -> (c'=c);
endmodule

module process1
	s1 : [0..3];
	u1 : bool;
	v1 : [0..K-1];
	p1 : [0..K-1];
	[pick] s1=0 -> 1/K : (s1'=1) & (p1'=0) & (v1'=0) & (u1'=true)
	             + 1/K : (s1'=1) & (p1'=1) & (v1'=1) & (u1'=true);
	[read] s1=1 & u1 & p1!=v2 & c<N -> (u1'=true) & (v1'=v2);
	[read] s1=1 & u1 & p1=v2 & c<N -> (u1'=false) & (v1'=v2) & (p1'=0);
	[read] s1=1 & !u1 & c<N -> (u1'=false) & (v1'=v2);
	[read] s1=1 & u1 & p1!=v2 & c=N -> (s1'=2) & (u1'=true) & (v1'=v2);
	[read] s1=1 & u1 & p1=v2 & c=N -> (u1'=false) & (v1'=v2) & (p1'=0);
	[read] s1=1 & !u1 & c=N -> (s1'=2) & (u1'=false) & (v1'=v2);
	[done] s1=2 -> (s1'=3) & (u1'=false) & (v1'=0) & (p1'=0);
	[retry] s1=2 -> (s1'=0) & (u1'=false) & (v1'=0) & (p1'=0);
	[loop] s1=3 -> (s1'=3);
endmodule

module process2 = process1 [ s1=s2, p1=p2, v1=v2, u1=u2, v2=v3 ] endmodule
module process3 = process1 [ s1=s3, p1=p3, v1=v3, u1=u3, v2=v1 ] endmodule

label "elected" = s1=3 & s2=3 & s3=3;
rewards "rounds" [pick] true : 1; endrewards
