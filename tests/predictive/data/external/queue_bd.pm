// Birth-death queue of capacity C with a server that may break down (bool), mod in a guard.
dtmc
const int C = 30;
const double lambda = 0.3;
const double mu = 0.4;
const double fail = 0.01;

module queue
	q : [0..C] init 0;
	broken : bool init false;
	[] !broken & q=0 -> lambda : (q'=1) + fail : (broken'=true) + 1-lambda-fail : true;
	[] !broken & q>0 & q<C -> lambda : (q'=q+1) + mu : (q'=q-1) + fail : (broken'=true) + 1-lambda-mu-fail : true;
	[] !broken & q=C -> mu : (q'=q-1) + fail : (broken'=true) + 1-mu-fail : true;
	[] broken -> 0.2 : (broken'=false) + 0.8 * lambda : (q'=min(C, q+1)) + 0.8 * (1-lambda) : true;
endmodule

label "full" = q=C;
label "even" = mod(q, 2)=0;
rewards "queue_length" true : q; endrewards
